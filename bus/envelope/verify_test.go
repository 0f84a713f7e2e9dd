package envelope_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/golang-jwt/jwt/v5"
)

// forge signs arbitrary claims as id, the way a misbehaving node could:
// header kid and cred are id's unless hdr overrides them.
func forge(t *testing.T, id *trust.Identity, hdr map[string]any, c jwt.MapClaims) []byte {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = id.ID
	tok.Header["cred"] = id.Credential
	maps.Copy(tok.Header, hdr)
	s, err := tok.SignedString(id.Key)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

// claimsOf are the claims of a good single-event message of type typ.
func claimsOf(id *trust.Identity, typ event.Type, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": id.ID, "jti": event.NewID(), "typ": string(typ), "run": "run-1", "pv": 1,
		"iat": now.Unix(), "exp": now.Add(envelope.TTL).Unix(), "data": map[string]string{"k": "v"},
	}
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	c = maps.Clone(c)
	if v == nil {
		delete(c, k)
	} else {
		c[k] = v
	}
	return c
}

// libraryText are fragments of the errors of the JWT, base64, JSON and
// crypto libraries: none may reach a reason recorded in a ledger.
var libraryText = []string{"token", "illegal base64", "invalid character", "cannot unmarshal", "ed25519", "crypto/", "unexpected end", "trust:"}

// Every refusal of the verifier carries a code from the list and a reason
// made without any library's text, the same from any verifier; together
// the cases give every code the verifier can give.
func TestRejectionCodes(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	now := time.Now()
	d := draft(event.TaskFinished)
	good, _, err := envelope.Sign(ex, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(good), ".")
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), "run-1", "run-2", 1))) + "." + parts[2]
	noneHdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"exec-1"}`))

	stranger := bustest.NewIdentities(t).Node(t, "exec-1", event.RoleExecutor)
	strangerMsg, _, _ := envelope.Sign(stranger, []event.Draft{d})
	expiredID, err := trust.NewIdentity(ids.Root, "exec-old", trust.KindNode, []string{event.RoleExecutor}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expiredCred, _, _ := envelope.Sign(expiredID, []event.Draft{d})
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsOf(ex, event.TaskFinished, now))
	hs.Header["kid"], hs.Header["cred"] = "exec-1", ex.Credential
	hsRaw, _ := hs.SignedString([]byte("secret"))
	other := ids.Node(t, "exec-2", event.RoleExecutor)
	base := claimsOf(ex, event.TaskFinished, now)
	big := with(base, "data", strings.Repeat("a", envelope.MaxMessageBytes))
	planD := event.MustDraft(event.PlanProposed, "run-1", map[string]int{"revision": 1})
	wrongRole, _, _ := envelope.Sign(ex, []event.Draft{planD})
	ahead, _, _ := envelope.SignAt(ex, []event.Draft{d}, now.Add(10*time.Minute), envelope.Version)
	behind, _, _ := envelope.SignAt(ex, []event.Draft{d}, now.Add(-10*time.Minute), envelope.Version)
	unknownV0, _, _ := envelope.SignAt(ex, []event.Draft{draft("task.progress")}, now, 0)
	foreignCategory, _, _ := envelope.SignAt(ex, []event.Draft{draft("plan.revised")}, now, 2)
	subj := d.Subject()

	cases := []struct {
		name    string
		subject string
		raw     []byte
		at      time.Time
		want    event.RejectCode
	}{
		{"garbage", subj, []byte(`{"typ":"task.finished"}`), now, event.RejectMalformed},
		{"bad base64", subj, []byte("!!.??.**"), now, event.RejectMalformed},
		{"negative version", subj, forge(t, ex, nil, with(base, "pv", -1)), now, event.RejectMalformed},
		{"non-integer version", subj, forge(t, ex, nil, with(base, "pv", 1.5)), now, event.RejectMalformed},
		{"no cred", subj, forge(t, ex, map[string]any{"cred": ""}, base), now, event.RejectMalformed},
		{"no exp", subj, forge(t, ex, nil, with(base, "exp", nil)), now, event.RejectMalformed},
		{"no iat", subj, forge(t, ex, nil, with(base, "iat", nil)), now, event.RejectMalformed},
		{"no jti", subj, forge(t, ex, nil, with(base, "jti", nil)), now, event.RejectMalformed},
		{"batch and single", subj, forge(t, ex, nil, with(base, "batch", []map[string]string{{"id": "a"}})), now, event.RejectMalformed},
		{"repeated batch id", subj, forge(t, ex, nil, with(with(with(base, "run", nil), "data", nil), "batch", []map[string]string{{"id": "a"}, {"id": "a"}})), now, event.RejectMalformed},
		{"oversized", subj, forge(t, ex, nil, big), now, event.RejectTooLarge},
		{"alg none", subj, []byte(noneHdr + "." + parts[1] + "."), now, event.RejectBadSignature},
		{"hs256", subj, []byte(hsRaw), now, event.RejectBadSignature},
		{"tampered", subj, []byte(tampered), now, event.RejectBadSignature},
		{"another key", subj, forge(t, other, map[string]any{"kid": "exec-1", "cred": ex.Credential}, base), now, event.RejectBadSignature},
		{"unknown root", subj, strangerMsg, now, event.RejectUnknownSigner},
		{"expired credential", subj, expiredCred, now, event.RejectCredentialExpired},
		{"kid of another", subj, forge(t, ex, map[string]any{"kid": "exec-2"}, base), now, event.RejectSignerMismatch},
		{"iss of another", subj, forge(t, ex, nil, with(base, "iss", "exec-2")), now, event.RejectSignerMismatch},
		{"expired message", subj, good, now.Add(envelope.TTL + envelope.Leeway), event.RejectExpired},
		{"clock 10m behind", subj, behind, now, event.RejectExpired},
		{"clock 10m ahead", subj, ahead, now, event.RejectNotYetValid},
		{"nbf ahead", subj, forge(t, ex, nil, with(base, "nbf", now.Add(time.Hour).Unix())), now, event.RejectNotYetValid},
		{"wrong role", planD.Subject(), wrongRole, now, event.RejectRoleNotAllowed},
		{"unknown type, foreign category", "agentic.ev.plan.revised", foreignCategory, now, event.RejectRoleNotAllowed},
		{"unknown type in version 0", "agentic.ev.task.progress", unknownV0, now, event.RejectUnknownType},
		{"wrong subject", event.Subject(event.TaskStarted, ""), good, now, event.RejectWrongSubject},
		{"secret", subj, forge(t, ex, nil, with(base, "data", map[string]string{"cmd": "mysql --password=hunter2"})), now, event.RejectSecret},
	}
	got := map[event.RejectCode]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := envelope.NewVerifier(ids.Root).Verify(c.raw, c.subject, c.at)
			if !errors.Is(err, envelope.ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
			r := envelope.AsRejection(err)
			if r.Code != c.want {
				t.Fatalf("code %q (%v), want %q", r.Code, err, c.want)
			}
			got[r.Code] = true
			for _, frag := range libraryText {
				if strings.Contains(strings.ToLower(r.Reason), frag) {
					t.Errorf("reason %q carries library text %q", r.Reason, frag)
				}
			}
			// Another verifier (a fresh credential cache) gives the same
			// record: nothing in it depends on the verifier.
			_, err2 := envelope.NewVerifier(ids.Root).Verify(c.raw, c.subject, c.at)
			if a, b := r.Record(c.subject), envelope.AsRejection(err2).Record(c.subject); a != b {
				t.Errorf("records differ: %+v vs %+v", a, b)
			}
		})
	}
	for _, code := range event.RejectCodes() {
		if code == event.RejectReplayed {
			break // the ledger's codes follow
		}
		if !got[code] {
			t.Errorf("no case gives %q", code)
		}
	}
}

// A credential found in the cache is judged as the first time it was seen.
func TestCachedCredentialExpiresAlike(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex, err := trust.NewIdentity(ids.Root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d := draft(event.TaskStarted)
	late := time.Now().Add(time.Minute + envelope.Leeway + time.Second)
	raw, _, err := envelope.SignAt(ex, []event.Draft{d}, late, envelope.Version)
	if err != nil {
		t.Fatal(err)
	}
	fresh := envelope.NewVerifier(ids.Root)
	_, cold := fresh.Verify(raw, d.Subject(), late)
	warm := envelope.NewVerifier(ids.Root)
	early, _, _ := envelope.Sign(ex, []event.Draft{d})
	if _, err := warm.Verify(early, d.Subject(), time.Now()); err != nil {
		t.Fatal(err)
	}
	_, hot := warm.Verify(raw, d.Subject(), late)
	if a, b := envelope.AsRejection(cold), envelope.AsRejection(hot); a.Code != event.RejectCredentialExpired || a.Record("s") != b.Record("s") {
		t.Fatalf("cold %v, cached %v", cold, hot)
	}
}

// Each message is judged by the rules of the version it declares; a newer
// version than the verifier knows by its newest rules.
func TestVersions(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	pl := ids.Node(t, "planner-1", event.RolePlanner)
	now := time.Now()
	v := envelope.NewVerifier(ids.Root)
	for _, version := range []int{0, 1, 7} {
		d := draft(event.TaskStarted)
		raw, _, err := envelope.SignAt(ex, []event.Draft{d}, now, version)
		if err != nil {
			t.Fatal(err)
		}
		claims, _ := base64.RawURLEncoding.DecodeString(strings.Split(string(raw), ".")[1])
		if has := strings.Contains(string(claims), `"pv":`); has != (version > 0) {
			t.Errorf("version %d: claims %s", version, claims)
		}
		env, err := v.Verify(raw, d.Subject(), now)
		if err != nil || env.Version != version || !env.Known {
			t.Fatalf("version %d: %+v %v", version, env, err)
		}
	}
	// An unknown type: kept from version 1 on (and in versions newer than
	// known) when the signer's roles may publish in its category.
	progress := draft("task.progress")
	for _, version := range []int{1, 2} {
		raw, _, _ := envelope.SignAt(ex, []event.Draft{progress}, now, version)
		env, err := v.Verify(raw, progress.Subject(), now)
		if err != nil || env.Known || env.Type != "task.progress" || len(env.Events) != 1 || env.Events[0].Node != "exec-1" {
			t.Fatalf("version %d unknown type: %+v %v", version, env, err)
		}
		raw, _, _ = envelope.SignAt(pl, []event.Draft{progress}, now, version)
		if _, err := v.Verify(raw, progress.Subject(), now); envelope.AsRejection(err).Code != event.RejectRoleNotAllowed {
			t.Fatalf("version %d unknown type from a planner: %v", version, err)
		}
	}
	if _, _, err := envelope.SignAt(ex, []event.Draft{progress}, now, -1); err == nil {
		t.Fatal("signed under version -1")
	}
	if got := envelope.Versions(); len(got) != envelope.Version+1 || got[envelope.Version].Version != envelope.Version || envelope.Current().Version != envelope.Version {
		t.Fatalf("rules table %+v", got)
	}
}

// Nodes of adjacent versions reach the same verdict, with the same record,
// on what the older one does not know: a node that knows only version 0,
// this build, and a build of the next version that adds task.progress.
func TestAdjacentVersionsAgree(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	pl := ids.Node(t, "planner-1", event.RolePlanner)
	now := time.Now()
	table := envelope.Versions()
	next := envelope.Version + 1
	v2 := table[envelope.Version]
	v2.Version = next
	v2.Types = append(v2.Types, event.Spec{Type: "task.progress", Roles: []string{event.RoleExecutor}, Since: next})
	verifiers := map[string]*envelope.Verifier{
		"v0":   envelope.NewVerifier(ids.Root, envelope.WithRules(table[:1])),
		"this": envelope.NewVerifier(ids.Root),
		"v2":   envelope.NewVerifier(ids.Root, envelope.WithRules(append(table, v2))),
	}
	progress := draft("task.progress")
	fromEx, _, _ := envelope.SignAt(ex, []event.Draft{progress}, now, next)
	fromPl, _, _ := envelope.SignAt(pl, []event.Draft{progress}, now, next)
	started := draft(event.TaskStarted)
	v1Msg, _, _ := envelope.SignAt(ex, []event.Draft{started}, now, 1)
	for _, m := range []struct {
		name    string
		raw     []byte
		subject string
	}{{"next version unknown type", fromEx, progress.Subject()}, {"next version foreign category", fromPl, progress.Subject()}, {"v1 known type", v1Msg, started.Subject()}} {
		var verdicts []string
		for _, name := range slices.Sorted(maps.Keys(verifiers)) {
			env, err := verifiers[name].Verify(m.raw, m.subject, now)
			var b []byte
			if err != nil {
				b, _ = json.Marshal(envelope.AsRejection(err).Record(m.subject))
			} else {
				b, _ = json.Marshal(env.Events)
			}
			verdicts = append(verdicts, string(b))
		}
		for _, v := range verdicts[1:] {
			if v != verdicts[0] {
				t.Errorf("%s: verdicts differ:\n%s", m.name, strings.Join(verdicts, "\n"))
				break
			}
		}
	}
	// Version 0 predates the rule: its unknown types are refused by all.
	old, _, _ := envelope.SignAt(ex, []event.Draft{progress}, now, 0)
	for name, v := range verifiers {
		if _, err := v.Verify(old, progress.Subject(), now); envelope.AsRejection(err).Code != event.RejectUnknownType {
			t.Errorf("%s: a version-0 unknown type: %v", name, err)
		}
	}
}

// Times are judged at stream time with the leeway: a signer whose clock is
// off by less is accepted, by more refused; either way the rejection names
// the authenticated signer and its iat, for skew monitoring.
func TestClockSkew(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)
	at := time.Now().Truncate(time.Second)
	d := draft(event.TaskStarted)
	for _, c := range []struct {
		skew time.Duration
		want event.RejectCode // "" accepted
	}{
		{0, ""},
		{envelope.Leeway, ""},
		{envelope.Leeway + time.Second, event.RejectNotYetValid},
		{10 * time.Minute, event.RejectNotYetValid},
		{-20 * time.Second, ""},
		{-envelope.TTL - envelope.Leeway + time.Second, ""},
		{-envelope.TTL - envelope.Leeway, event.RejectExpired},
		{-10 * time.Minute, event.RejectExpired},
	} {
		raw, _, err := envelope.SignAt(ex, []event.Draft{d}, at.Add(c.skew), envelope.Version)
		if err != nil {
			t.Fatal(err)
		}
		env, err := v.Verify(raw, d.Subject(), at)
		if c.want == "" {
			if err != nil || !env.IssuedAt.Equal(at.Add(c.skew)) {
				t.Errorf("skew %s: %v, iat %v", c.skew, err, env)
			}
			continue
		}
		r := envelope.AsRejection(err)
		if r.Code != c.want || r.Signer != "exec-1" || !r.IssuedAt.Equal(at.Add(c.skew)) {
			t.Errorf("skew %s: %v (signer %q, iat %v), want %s", c.skew, err, r.Signer, r.IssuedAt, c.want)
		}
	}
}
