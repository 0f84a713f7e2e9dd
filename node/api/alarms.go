package api

import (
	"context"

	"github.com/agentic-dev/agentic/node/nodes"
)

// MethodAlarmsList pages through the alarms in force in the cluster
// (agentctl alarm ls): raised by a node (alarm.raised) and not cleared
// since (alarm.cleared), as the answering ledger node folded them.
const MethodAlarmsList = "alarms.list"

// Alarm is one alarm in force (see nodes.Alarm).
type Alarm = nodes.Alarm

// Page sizes of alarms.list: a request's limit is clamped to the maximum;
// 0 asks for the default.
const (
	DefaultAlarmsPage = 1000
	MaxAlarmsPage     = 1000
)

// AlarmsListRequest asks for a page of alarms, by node then code (the
// cursor is the Next of the previous page; Limit defaults to and is capped
// at MaxAlarmsPage).
type AlarmsListRequest = CursorRequest

// AlarmsList reads one page of alarms.
func (c *Client) AlarmsList(ctx context.Context, req AlarmsListRequest) (*Page[Alarm], error) {
	var p Page[Alarm]
	if err := c.Call(ctx, MethodAlarmsList, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Alarms reads every alarm in force, page after page.
func (c *Client) Alarms(ctx context.Context) ([]Alarm, error) {
	all := []Alarm{}
	fetch := func(ctx context.Context, cursor string) (*Page[Alarm], error) {
		return c.AlarmsList(ctx, AlarmsListRequest{Cursor: cursor})
	}
	for a, err := range Walk(ctx, "", fetch) {
		if err != nil {
			return nil, err
		}
		all = append(all, a)
	}
	return all, nil
}
