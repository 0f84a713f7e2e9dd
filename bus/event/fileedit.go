package event

// FileAbsent is the before- or after-image of a file that does not exist:
// the before-image of a file an edit created, the after-image of one it
// deleted. Restoring an edit whose Before is FileAbsent deletes the file.
const FileAbsent = "absent"

// KindFileRestore undoes a completed file.write or file.patch (protocol
// version 5): the executor that applied the edit puts back the
// before-images of TaskAssignedData.Compensates.Edits, in reverse order —
// deleting the files the edit created — using the content it stored by
// hash when it applied the edit. Restoring is idempotent: a file that
// already holds its before-image is left alone, so a compensation
// interrupted by a crash is simply run again. A file that holds neither
// image (changed by someone since the edit) is not touched: the
// compensation fails (class logic) and says which file.
const KindFileRestore StepKind = "file.restore"

// FileEdit is what one file edit changed in one file: the reference an
// executor keeps of the file's content before and after the edit, so that
// the edit can be compensated. TaskFinishedData.Edits lists one per file
// a file.write or file.patch step changed (or would have changed: a file
// that already held the result is listed with Before equal to After).
type FileEdit struct {
	// Path is the file, absolute and clean, as the executor resolved it
	// (symlinks of its directories resolved).
	Path string `json:"path"`
	// Before is the content hash of the file before the edit,
	// "sha256:<hex>", or FileAbsent when the edit created it.
	Before string `json:"before"`
	// After is the content hash after the edit, or FileAbsent when the
	// edit deleted it.
	After string `json:"after"`
	// Mode is the before-image's permission bits in octal ("0644"); empty
	// when Before is FileAbsent.
	Mode string `json:"mode,omitempty"`
}

// Compensation names the completed step attempt an assignment undoes
// (TaskAssignedData.Compensates). A file.restore step restores Edits —
// the Edits of that attempt's task.finished, as recorded — on the node
// that applied them; a shell step that compensates runs the step's
// Compensate command.
type Compensation struct {
	// Step and Attempt name the completed attempt being undone.
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Edits are the before-image references to restore (file.restore).
	// Empty when the attempt was interrupted before it reported them: the
	// executor then restores what it recorded of the step's edit itself.
	Edits []FileEdit `json:"edits,omitempty"`
}
