package api

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "65536": 65536, "64k": 64 << 10, "512m": 512 << 20, "1g": 1 << 30, "1.5g": 3 << 29, "2GiB": 2 << 30, " 8m ": 8 << 20, "8mb": 8 << 20, "1t": 1 << 40, "3B": 3} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "lots", "1x", "1e400", "1.5.2m", "m", "99999999999p"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "30": 30 * time.Second, "1.5": 1500 * time.Millisecond, "30s": 30 * time.Second, "2m": 2 * time.Minute, "250ms": 250 * time.Millisecond, "24h": 24 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "-5s", "soon", "NaN", "1e300"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q): no error", in)
		}
	}
}
