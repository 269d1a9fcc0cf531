package policy

import (
	"os"
	"testing"
)

func BenchmarkZZPhases(b *testing.B) {
	src, _ := os.ReadFile("/tmp/slow.sh")
	s := string(src)
	p := Default()
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			parse(s)
		}
	})
	b.Run("parse+collect", func(b *testing.B) {
		for b.Loop() {
			f, _ := parse(s)
			c := p.newChecker()
			c.collect(s, f)
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			f, _ := parse(s)
			c := p.newChecker()
			c.collect(s, f)
			c.walk(s, f, 0)
		}
	})
}
