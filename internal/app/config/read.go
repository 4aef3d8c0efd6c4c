package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadFile reads the config file at path, bounded before anything is
// parsed: it opens the file, refuses one that is not a regular file (a
// device such as /dev/zero, a directory, a pipe, a socket) and one larger
// than MaxFileBytes, and reads at most MaxFileBytes+1 bytes whatever the
// file claims, so a path to an endless or huge file costs at most that
// much memory. A symbolic link is followed (Kubernetes mounts a ConfigMap
// so). Its errors wrap ErrConfig and name the path.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s, not a regular file: give the path of a YAML file", ErrConfig, path, kindOf(st.Mode()))
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes; a config may hold at most %d (%d KiB)", ErrConfig, path, st.Size(), MaxFileBytes, MaxFileBytes>>10)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrConfig, path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s grew past %d bytes while read; a config may hold at most %d KiB", ErrConfig, path, MaxFileBytes, MaxFileBytes>>10)
	}
	return data, nil
}

// kindOf names what a non-regular file is, for ReadFile's message.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
