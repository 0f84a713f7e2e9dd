package api

import "context"

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
