package policy

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// sizeUnits are the suffixes a size may carry, binary and decimal.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseSize reads a byte size: a whole number of bytes, or one with a
// unit ("512MiB", "1GiB", "2GB").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (want bytes, or e.g. 512MiB, 1GiB)", s)
	}
	return n * mult, nil
}

// size decodes a byte size: a whole number of bytes, or a string with a
// unit.
func (l *loader) size(n *yaml.Node, key string) (int64, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		return l.integer(n, key, 0, 1<<62)
	}
	s, ok := l.str(n, key)
	if !ok {
		return 0, false
	}
	v, err := ParseSize(s)
	if err != nil {
		l.bad(n, key, "%v", err)
		return 0, false
	}
	return v, true
}
