// Package fileedit applies the file edits of file.write and file.patch
// steps, keeps their before-images, and restores them.
//
// A Store lives in a directory of the executor's data directory. It holds
// the before-image of every file an edit changed, as a content-addressed
// file (blobs/<hex>, named by the sha256 of the content), and a journal
// entry per edit (edits/<hash of the key>.json) listing, for each file, the
// content hash before and after the edit (event.FileEdit; a missing file is
// event.FileAbsent). Both are written and synced before the first file
// changes, so a crash at any point leaves what is needed to finish or undo
// the edit.
//
// Invariants:
//
//  1. Applying is idempotent: an edit applied again (the same key) leaves
//     files that already hold their result alone and reports the
//     before-images the first application recorded.
//  2. Files change atomically: the new content goes to a temporary file in
//     the same directory, synced, renamed over the file, and the directory
//     is synced. An existing file keeps its permission bits and its owner
//     (an edit that cannot give the new file that owner fails, changing
//     nothing); a new file gets the edit's Mode.
//  3. A patch touching several files is checked against all of them before
//     any changes: one that does not apply changes nothing.
//  4. Restoring is idempotent: a file that holds its before-image is left
//     alone; one that holds its after-image gets the before-image back (or
//     is deleted, when the edit created it); one that holds anything else
//     was changed since the edit and is not touched — Restore fails, naming
//     it, before it changes any file. Only edits the journal holds (for
//     the key given) are restored: a restore never touches a file the
//     store did not edit.
//  5. Paths stay inside the step's working directory: a relative path that
//     leaves it with "..", or through a symlink, is refused; an absolute
//     path outside it only when Options.AllowAbsolute allows it. A path
//     that names a symlink, a directory or another non-regular file is
//     refused, and so is a file larger than Options.MaxFileBytes. Files
//     are then read and written through an os.Root opened at the working
//     directory, so a directory swapped for a symlink after the check
//     does not lead an operation out of it.
//  6. Every operation on the edited files runs inside Options.As — the
//     executor gives runner.AsUser, so they are made as the step user: an
//     edit reaches only what that user may read and write, a file it
//     creates is that user's, and a diff holds only what that user could
//     read. The store's before-images and journal are read and written
//     outside it, as the process, where the user cannot reach them.
//
// Patches are unified diffs, as git diff or diff -u write them, parsed and
// applied with github.com/bluekeyes/go-gitdiff (strict application: every
// context line must match). Names are relative to the working directory;
// git's a/ and b/ prefixes are dropped. Renames, copies, binary patches and
// mode changes are refused.
//
// Example:
//
//	st, err := fileedit.Open(filepath.Join(dataDir, "executor-edits"))
//	e := fileedit.Edit{Key: run + "/" + step, Kind: event.KindFileWrite, Dir: cwd, Path: "app.conf", Content: "port = 80\n"}
//	diff, err := fileedit.DryRun(e, fileedit.Options{}) // what a gate shows
//	res, err := st.Apply(e, fileedit.Options{})           // res.Edits go into task.finished
//	_, err = st.Restore(e.Key, res.Edits, fileedit.Options{}) // the compensation
package fileedit
