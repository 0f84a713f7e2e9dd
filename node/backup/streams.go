package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// JetStream API subjects of stream snapshots (nats-server's
// $JS.API.STREAM.SNAPSHOT and .RESTORE).
const (
	snapshotSubject = "$JS.API.STREAM.SNAPSHOT."
	restoreSubject  = "$JS.API.STREAM.RESTORE."
	chunkSize       = 128 << 10
)

// apiError is the error of a JetStream API response.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code"`
	Description string `json:"description"`
}

// Stream is one stream of a backup: its configuration and state when the
// snapshot was taken, and the snapshot file (nats-server's format: the
// stream's store and consumers, s2-compressed).
type Stream struct {
	Name string `json:"name"`
	// File is the snapshot's file name in the backup's streams directory.
	File string `json:"file"`
	// Messages, FirstSeq and LastSeq are the stream's state at the
	// snapshot.
	Messages uint64 `json:"messages"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Config and State are as the server reported them; a restore hands
	// them back.
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// SnapshotStream writes a consistent snapshot of stream name, with its
// consumers and every message checksum checked, into path, through the
// JetStream API on nc.
func SnapshotStream(ctx context.Context, nc *nats.Conn, name, path string) (Stream, error) {
	out := Stream{Name: name}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return out, fmt.Errorf("backup: stream %s: %w", name, err)
	}
	defer f.Close()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return out, fmt.Errorf("backup: stream %s: %w", name, err)
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "chunk_size": chunkSize, "jsck": true})
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	msg, err := nc.RequestWithContext(rctx, snapshotSubject+name, req)
	cancel()
	if err != nil {
		return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
	}
	var resp struct {
		Error  *apiError       `json:"error"`
		Config json.RawMessage `json:"config"`
		State  json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
	}
	if resp.Error != nil {
		return out, fmt.Errorf("backup: snapshot of stream %s: %s (%d)", name, resp.Error.Description, resp.Error.ErrCode)
	}
	out.Config, out.State = resp.Config, resp.State
	var st struct {
		Msgs     uint64 `json:"messages"`
		FirstSeq uint64 `json:"first_seq"`
		LastSeq  uint64 `json:"last_seq"`
	}
	if err := json.Unmarshal(resp.State, &st); err != nil {
		return out, fmt.Errorf("backup: stream %s state: %w", name, err)
	}
	out.Messages, out.FirstSeq, out.LastSeq = st.Msgs, st.FirstSeq, st.LastSeq
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
		}
		if len(m.Data) == 0 {
			// The end, or the server's reason for stopping.
			if s := m.Header.Get("Status"); s != "" && s != "204" {
				return out, fmt.Errorf("backup: snapshot of stream %s: %s %s", name, s, m.Header.Get("Description"))
			}
			break
		}
		if _, err := f.Write(m.Data); err != nil {
			return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
		}
		if m.Reply != "" {
			if err := nc.Publish(m.Reply, nil); err != nil {
				return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return out, fmt.Errorf("backup: snapshot of stream %s: %w", name, err)
	}
	return out, f.Close()
}

// RestoreStream creates stream s from its snapshot file at path through
// the JetStream API on nc. The stream must not exist.
func RestoreStream(ctx context.Context, nc *nats.Conn, s Stream, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("backup: restore stream %s: %w", s.Name, err)
	}
	defer f.Close()
	req, _ := json.Marshal(map[string]json.RawMessage{"config": s.Config, "state": s.State})
	var resp struct {
		Error          *apiError `json:"error"`
		DeliverSubject string    `json:"deliver_subject"`
	}
	if err := request(ctx, nc, restoreSubject+s.Name, req, &resp); err != nil {
		return fmt.Errorf("backup: restore stream %s: %w", s.Name, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("backup: restore stream %s: %s (%d)", s.Name, resp.Error.Description, resp.Error.ErrCode)
	}
	buf := make([]byte, chunkSize)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			var ack struct {
				Error *apiError `json:"error"`
			}
			if err := request(ctx, nc, resp.DeliverSubject, buf[:n], &ack); err != nil {
				return fmt.Errorf("backup: restore stream %s: %w", s.Name, err)
			}
			if ack.Error != nil {
				return fmt.Errorf("backup: restore stream %s: %s (%d)", s.Name, ack.Error.Description, ack.Error.ErrCode)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("backup: restore stream %s: %w", s.Name, rerr)
		}
	}
	var done struct {
		Error *apiError `json:"error"`
	}
	if err := request(ctx, nc, resp.DeliverSubject, nil, &done); err != nil {
		return fmt.Errorf("backup: restore stream %s: %w", s.Name, err)
	}
	if done.Error != nil {
		return fmt.Errorf("backup: restore stream %s: %s (%d)", s.Name, done.Error.Description, done.Error.ErrCode)
	}
	return nil
}

// request sends data to subj and decodes a non-empty answer into v.
func request(ctx context.Context, nc *nats.Conn, subj string, data []byte, v any) error {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m, err := nc.RequestWithContext(rctx, subj, data)
	if err != nil {
		return err
	}
	if len(m.Data) == 0 {
		return nil
	}
	return json.Unmarshal(m.Data, v)
}
