package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

var _ Store = (*File)(nil)

// stateVersion is the version of the file format File writes.
const stateVersion = 1

// File is a Store in one small JSON file, dir/shaper.json,
// replaced atomically (written to a temporary file in dir, synced, then
// renamed over the old one). One worker per directory: two workers sharing
// one would overwrite each other's state.
type File struct {
	dir, path string
}

// NewFile returns a File in dir, creating dir (0700) if needed.
func NewFile(dir string) (*File, error) {
	if dir == "" {
		return nil, errors.New("pacer: state dir is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pacer: state dir: %w", err)
	}
	return &File{dir: dir, path: filepath.Join(dir, "shaper.json")}, nil
}

// Path is the state file's path.
func (f *File) Path() string { return f.path }

type stateFile struct {
	Version int `json:"version"`
	ShaperState
}

// Load reads the state file; ok is false when there is none.
func (f *File) Load(context.Context) (ShaperState, bool, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return ShaperState{}, false, nil
	}
	if err != nil {
		return ShaperState{}, false, fmt.Errorf("pacer: reading state: %w", err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return ShaperState{}, false, fmt.Errorf("pacer: state file %s: %w", f.path, err)
	}
	if sf.Version != stateVersion {
		return ShaperState{}, false, fmt.Errorf("pacer: state file %s: version %d (want %d)", f.path, sf.Version, stateVersion)
	}
	return sf.ShaperState, true, nil
}

// Save replaces the state file atomically.
func (f *File) Save(_ context.Context, s ShaperState) error {
	b, err := json.Marshal(stateFile{Version: stateVersion, ShaperState: s})
	if err != nil {
		return fmt.Errorf("pacer: encoding state: %w", err)
	}
	tmp, err := os.CreateTemp(f.dir, ".shaper-*.json")
	if err != nil {
		return fmt.Errorf("pacer: writing state: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, f.path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("pacer: writing state: %w", err)
	}
	if d, err := os.Open(f.dir); err == nil {
		_ = d.Sync() // the rename itself survives a power loss
		d.Close()
	}
	return nil
}
