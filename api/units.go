package api

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads a size as people write it for the CLI's flags and the
// server's configuration: a number of bytes, or one with a binary unit, as
// docker writes them (64k, 512m, 1g, 1.5g, 2GiB, 8mb). It refuses negative sizes.
func ParseSize(s string) (int64, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (e.g. 65536, 512m, 1g)", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	shift := 0
	if m[2] != "" {
		shift = strings.Index("kmgtp", strings.ToLower(m[2])) + 1
	}
	size := n * float64(uint64(1)<<(10*shift))
	if err != nil || size > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size (e.g. 65536, 512m, 1g)", s)
	}
	return int64(size), nil
}

var sizePattern = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*(?i:([kmgtp])?(?:i?b)?)$`)

// ParseDuration reads a duration as people write it for the CLI's flags and
// the server's configuration: seconds ("30", "1.5") or a Go duration ("30s",
// "2m", "250ms"). It refuses negative and non-finite durations.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 2m, or 30 for seconds)", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 2m, or 30 for seconds)", s)
	}
	return d, nil
}
