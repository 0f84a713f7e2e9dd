package artifact_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func b64(data []byte) string {
	s := sha256.Sum256(data)
	return base64.URLEncoding.EncodeToString(s[:])
}

// publishMeta writes an object's metadata message as nats.go does, so a
// test can forge one.
func publishMeta(ctx context.Context, js jetstream.JetStream, info *jetstream.ObjectInfo) error {
	m := nats.NewMsg(fmt.Sprintf("$O.%s.M.%s", artifact.Bucket, base64.URLEncoding.EncodeToString([]byte(info.Name))))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	m.Data = b
	_, err = js.PublishMsg(ctx, m)
	return err
}
