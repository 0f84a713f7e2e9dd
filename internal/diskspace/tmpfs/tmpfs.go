// Package tmpfs gives tests a small file system of their own, to fill and
// free: a tmpfs mounted on a temporary directory (the tests run as root;
// without root they are skipped, saying why).
package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// FillName is the file Fill writes in the tmpfs's root.
const FillName = "fill.bin"

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns it; it is unmounted when t ends. t is skipped when the test is
// not root (mount needs it).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (a small file system to fill and free)")
	}
	dir, err := os.MkdirTemp("", "agentic-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Fatalf("mount tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
		os.Remove(dir)
	})
	return dir
}

// Resize grows (or shrinks) the tmpfs mounted on dir to size bytes.
func Resize(t testing.TB, dir string, size int64) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", size), dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s: %v: %s", dir, err, out)
	}
}

// Free returns the bytes free on the file system of dir.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// Fill writes dir/FillName until about leave bytes are free on dir's file
// system (leave 0: until the disk is full). Removing the file frees the
// space again.
func Fill(t testing.TB, dir string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, FillName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		want := Free(t, dir) - leave
		if want <= 0 {
			return
		}
		n := min(want, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
