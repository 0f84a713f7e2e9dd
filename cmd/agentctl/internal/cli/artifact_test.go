package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serveArtifacts answers artifacts.list with arts, signed, beside the
// harness's fake node.
func (h *harness) serveArtifacts(arts []api.Artifact) {
	h.t.Helper()
	srv := api.NewServer(h.conn.NC, "node-art", nil)
	srv.Sign(h.signer(h.t, "node-art"))
	api.HandleTyped(srv, api.MethodArtifactsList, func(_ context.Context, req api.ArtifactsRequest) (api.Page[api.Artifact], error) {
		out := []api.Artifact{}
		for _, a := range arts {
			if a.Run == req.Run && (req.Name == "" || a.Name == req.Name) {
				out = append(out, a)
			}
		}
		if req.Name != "" && len(out) == 0 {
			return api.Page[api.Artifact]{}, fmt.Errorf("%w: run %s stored no artifact %q", api.ErrNotFound, req.Run, req.Name)
		}
		return api.Page[api.Artifact]{Items: out, End: true}, nil
	})
	if err := srv.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(srv.Stop)
}

// TestArtifactCommands: ls lists what the signed answer says; get writes
// the bytes, verified, to standard output or a file; a tampered object is
// refused with a non-zero exit and leaves nothing at --out, nor on
// standard output.
func TestArtifactCommands(t *testing.T) {
	h := newHarness(t).withNode()
	ctx := context.Background()
	st, err := artifact.Open(ctx, h.conn.JS)
	if err != nil {
		t.Fatal(err)
	}
	report := bytes.Repeat([]byte("the report\n"), 20000)
	info, err := st.Put(ctx, "report.md", bytes.NewReader(report), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.Put(ctx, "other.bin", strings.NewReader("other bytes"), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	art := func(i artifact.Info) api.Artifact {
		return api.Artifact{Run: runA, Name: i.Name, Size: i.Size, SHA256: i.SHA256, Object: i.Object, Step: "make", Attempt: 1, Retention: "run"}
	}
	h.serveArtifacts([]api.Artifact{art(info), art(other)})

	r := h.run("artifact", "ls", "--run", runA)
	if r.code != 0 || !strings.Contains(r.stdout, "report.md") || !strings.Contains(r.stdout, info.SHA256) || !strings.Contains(r.stdout, "make#1") {
		t.Fatalf("artifact ls = %+v", r)
	}
	if got := decodeJSON[[]api.Artifact](t, h.run("artifact", "ls", "--run", runA, "-o", "json").stdout); len(got) != 2 || got[0].SHA256 != info.SHA256 {
		t.Fatalf("artifact ls -o json = %+v", got)
	}
	if r := h.run("artifact", "get", runA, "report.md"); r.code != 0 || r.stdout != string(report) {
		t.Fatalf("artifact get: exit %d, %d bytes, stderr %s", r.code, len(r.stdout), r.stderr)
	}
	dst := filepath.Join(t.TempDir(), "report.md")
	if r := h.run("artifact", "get", runA, "report.md", "--out", dst); r.code != 0 {
		t.Fatalf("artifact get --out = %+v", r)
	}
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, report) {
		t.Fatalf("--out wrote %d bytes, %v", len(b), err)
	}
	if r := h.run("artifact", "get", runA, "nope.md"); r.code == 0 || !strings.Contains(r.stderr, "nope.md") {
		t.Fatalf("artifact get of a name not stored = %+v", r)
	}

	// The chunks of report.md replaced: its metadata, with the recorded
	// digest and size, now points at other chunks.
	obs, err := h.conn.JS.ObjectStore(ctx, artifact.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(report)
	bad[100] = 'X'
	forged, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "forged"}, bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	oi, err := obs.GetInfo(ctx, info.Object)
	if err != nil {
		t.Fatal(err)
	}
	oi.NUID, oi.Chunks = forged.NUID, forged.Chunks
	m := nats.NewMsg("$O." + artifact.Bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(info.Object)))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if m.Data, err = json.Marshal(oi); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.md")
	r = h.run("artifact", "get", runA, "report.md", "--out", tampered)
	if r.code == 0 || !strings.Contains(r.stderr, "does not match its recorded sha256") || !strings.Contains(r.stderr, "do not use it") {
		t.Fatalf("artifact get of tampered chunks = %+v", r)
	}
	if ents, _ := os.ReadDir(filepath.Dir(tampered)); len(ents) != 0 {
		t.Fatalf("a refused get left %v", ents)
	}
	// To standard output: nothing written, a non-zero exit, the reason;
	// the temporary copy it verified is gone.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if r := h.run("artifact", "get", runA, "report.md"); r.code == 0 || r.stdout != "" ||
		!strings.Contains(r.stderr, "does not match its recorded sha256") || !strings.Contains(r.stderr, "do not use it") {
		t.Fatalf("artifact get to stdout of tampered chunks: exit %d, %d bytes written, stderr %s", r.code, len(r.stdout), r.stderr)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("a refused get to stdout left %v in the temp dir", ents)
	}
	// Whole bytes replaced, metadata and all: refused before a byte.
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: other.Object}, strings.NewReader("replaced")); err != nil {
		t.Fatal(err)
	}
	if r := h.run("artifact", "get", runA, "other.bin"); r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, "does not match") {
		t.Fatalf("artifact get of a replaced object = %+v", r)
	}
}

// TestNodeBackupNoArtifacts: --no-artifacts reaches the node, and what the
// node says it left out is printed.
func TestNodeBackupNoArtifacts(t *testing.T) {
	h := newHarness(t).withNode()
	srv := api.NewServer(h.conn.NC, "node-b", nil)
	srv.Sign(h.signer(h.t, "node-b"))
	var mu sync.Mutex
	var asked []api.BackupRequest
	api.HandleTyped(srv, api.MethodNodeBackup, func(_ context.Context, req api.BackupRequest) (api.BackupResult, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		r := api.BackupResult{Node: "node-b", Dir: req.Out, Stores: []string{"ledger"}, Files: []string{"FORMAT"},
			Streams: []api.BackupStream{{Name: "AGENTIC_EVENTS", Messages: 3, LastSeq: 3}}}
		if req.NoArtifacts {
			r.ArtifactsOmitted = "left out on request (--no-artifacts)"
		} else {
			r.Streams = append(r.Streams, api.BackupStream{Name: artifact.BucketStream, Messages: 2, LastSeq: 2})
		}
		return r, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	r := h.run("node", "backup", "node-b", "--out", "/srv/backup/b1")
	if r.code != 0 || !strings.Contains(r.stdout, "stream   "+artifact.BucketStream) || strings.Contains(r.stdout, "artifacts not included") {
		t.Fatalf("node backup = %+v", r)
	}
	r = h.run("node", "backup", "node-b", "--out", "/srv/backup/b2", "--no-artifacts")
	if r.code != 0 || !strings.Contains(r.stdout, "artifacts not included: left out on request") {
		t.Fatalf("node backup --no-artifacts = %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0].NoArtifacts || !asked[1].NoArtifacts {
		t.Fatalf("the node was asked %+v", asked)
	}
}
