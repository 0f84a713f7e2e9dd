package runner

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// lookupUser answers as the user database does, by name and by numeric
// id, and looks again once a user database file changes.
func TestLookupUserCached(t *testing.T) {
	dir := t.TempDir()
	files := [2]string{filepath.Join(dir, "passwd"), filepath.Join(dir, "group")}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	oldFiles, oldLookup := userFiles, lookupUserAgain
	calls := 0
	userFiles = files
	lookupUserAgain = func(name string) (*user.User, error) {
		calls++
		return lookupUserUncached(name)
	}
	t.Cleanup(func() { userFiles, lookupUserAgain = oldFiles, oldLookup })

	// root is in every /etc/passwd, by name and by id, whoever runs this.
	for _, name := range []string{"root", "0"} {
		for range 3 {
			u, err := lookupUser(name)
			want, werr := lookupUserUncached(name)
			if err != nil || werr != nil || !reflect.DeepEqual(u, want) {
				t.Fatalf("lookupUser(%s) = %+v, %v; uncached %+v, %v", name, u, err, want, werr)
			}
		}
	}
	if calls != 2 {
		t.Fatalf("looked up %d times for two names asked three times each, want 2", calls)
	}
	// A changed file (another size, another time) is looked up again.
	if err := os.WriteFile(files[1], []byte("xy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lookupUser("0"); err != nil || calls != 3 {
		t.Fatalf("after the group file changed: %v, %d lookups, want 3", err, calls)
	}
	// An unknown user is an error every time, never cached.
	if _, err := lookupUser("agentic-no-such-user-" + strconv.Itoa(os.Getpid())); err == nil {
		t.Fatal("an unknown user was found")
	}
	if _, err := lookupUser("agentic-no-such-user-" + strconv.Itoa(os.Getpid())); err == nil || calls != 5 {
		t.Fatalf("unknown user asked twice: %v, %d lookups, want 5", err, calls)
	}
}

// BenchmarkLookupUser is the lookup of a step's user given by numeric id
// (executor.run_as: "0" on a test node).
func BenchmarkLookupUser(b *testing.B) {
	uid := strconv.Itoa(os.Getuid())
	for b.Loop() {
		if _, err := lookupUser(uid); err != nil {
			b.Fatal(err)
		}
	}
}

// A user's supplementary groups are read once while the user database
// files are unchanged (each step read /etc/group before), looked up again
// once one changes, and a failed lookup is not kept.
func TestUserGroupsCached(t *testing.T) {
	dir := t.TempDir()
	files := [2]string{filepath.Join(dir, "passwd"), filepath.Join(dir, "group")}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	oldFiles, oldGroups := userFiles, groupIDsAgain
	calls, fail := 0, false
	userFiles = files
	groupIDsAgain = func(u *user.User) ([]string, error) {
		calls++
		if fail {
			return nil, os.ErrNotExist
		}
		return u.GroupIds()
	}
	t.Cleanup(func() { userFiles, groupIDsAgain = oldFiles, oldGroups })

	u, err := lookupUser("0")
	if err != nil {
		t.Fatal(err)
	}
	want, werr := u.GroupIds()
	for range 3 {
		got, err := userGroups(u)
		if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) {
			t.Fatalf("userGroups(root) = %v, %v; uncached %v, %v", got, err, want, werr)
		}
	}
	if calls != 1 {
		t.Fatalf("read the groups %d times for three asks, want 1", calls)
	}
	// Another user of the same name is another entry.
	other := *u
	other.Gid = "4242"
	if _, err := userGroups(&other); err != nil || calls != 2 {
		t.Fatalf("another gid: %v, %d reads, want 2", err, calls)
	}
	// A changed group file is read again; a failure is an error each time.
	if err := os.WriteFile(files[1], []byte("xy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fail = true
	for range 2 {
		if _, err := userGroups(u); err == nil {
			t.Fatal("a failed group lookup was answered")
		}
	}
	if calls != 4 {
		t.Fatalf("after the group file changed: %d reads, want 4", calls)
	}
	fail = false
	if got, err := userGroups(u); err != nil || !reflect.DeepEqual(got, want) || calls != 5 {
		t.Fatalf("after the failure: %v, %v, %d reads, want %v and 5", got, err, calls, want)
	}
}

// resolveAccount stats the user database files once per step, not once
// for the user and again for its groups; a changed file is still seen:
// the user is looked up again. The executor is made root (geteuid) and
// the step user a user of the test's own (lookupUserAgain,
// groupIDsAgain): resolving only computes the credential, so neither
// root nor a system user is needed.
func TestResolveAccountStatsOnce(t *testing.T) {
	dir := t.TempDir()
	files := [2]string{filepath.Join(dir, "passwd"), filepath.Join(dir, "group")}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	oldFiles, oldStat, oldLookup, oldGroups, oldEuid := userFiles, statUserFile, lookupUserAgain, groupIDsAgain, geteuid
	stats, lookups := 0, 0
	userFiles = files
	statUserFile = func(path string) fileStamp {
		stats++
		return stampOf(path)
	}
	stepUser := user.User{Username: "stepuser", Uid: "4242", Gid: "4242", HomeDir: dir}
	lookupUserAgain = func(name string) (*user.User, error) {
		lookups++
		if name != stepUser.Username {
			return nil, fmt.Errorf("no such user %q", name)
		}
		u := stepUser
		return &u, nil
	}
	groupIDsAgain = func(*user.User) ([]string, error) { return []string{"4242", "4343"}, nil }
	geteuid = func() int { return 0 }
	t.Cleanup(func() {
		userFiles, statUserFile, lookupUserAgain, groupIDsAgain, geteuid = oldFiles, oldStat, oldLookup, oldGroups, oldEuid
	})

	opts := Options{RunAs: stepUser.Username}
	for range 3 {
		a, err := resolveAccount(Spec{}, opts)
		if err != nil || a.cred == nil || a.name != stepUser.Username {
			t.Fatalf("resolveAccount = %+v, %v", a, err)
		}
	}
	if stats != 3*len(files) {
		t.Errorf("three steps stat the user files %d times, want %d", stats, 3*len(files))
	}
	if lookups != 1 {
		t.Errorf("three steps looked the user up %d times, want 1", lookups)
	}
	if err := os.WriteFile(files[0], []byte("xy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveAccount(Spec{}, opts); err != nil || lookups != 2 {
		t.Errorf("after the passwd file changed: %v, %d lookups, want 2", err, lookups)
	}
}
