package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// alarmsFileVersion is the format of the alarms file.
const alarmsFileVersion = 1

// alarmsFile is what AlarmsFile holds: the alarms the node raised and has
// not cleared.
type alarmsFile struct {
	Version int               `json:"version"`
	Alarms  []event.AlarmData `json:"alarms"`
}

// readAlarms reads the alarms file at path: none when path is "" or the
// file does not exist.
func readAlarms(path string) ([]event.AlarmData, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("health: read alarms file: %w", err)
	}
	var f alarmsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("health: alarms file %s does not decode (delete it: alarms in force are raised again): %w", path, err)
	}
	if f.Version != alarmsFileVersion {
		return nil, fmt.Errorf("health: alarms file %s: version %d, want %d", path, f.Version, alarmsFileVersion)
	}
	for _, a := range f.Alarms {
		if a.Alarm == "" {
			return nil, fmt.Errorf("health: alarms file %s: an alarm without a code", path)
		}
	}
	return f.Alarms, nil
}

// writeAlarms replaces the alarms file at path atomically: a temporary
// file, synced, renamed over it, the directory synced.
func writeAlarms(path string, alarms []event.AlarmData) error {
	slices.SortFunc(alarms, func(a, b event.AlarmData) int { return strings.Compare(string(a.Alarm), string(b.Alarm)) })
	if alarms == nil {
		alarms = []event.AlarmData{}
	}
	b, err := json.MarshalIndent(alarmsFile{Version: alarmsFileVersion, Alarms: alarms}, "", "  ")
	if err != nil {
		return fmt.Errorf("health: encode alarms: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("health: write alarms file: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("health: write alarms file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("health: replace alarms file %s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("health: sync alarms file directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("health: sync alarms file directory: %w", err)
	}
	return nil
}
