package policy

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestZZScratch(t *testing.T) {
	f, err := os.Open("/tmp/scratch_cmds.txt")
	if err != nil {
		t.Skip()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		mode := ModeStandard
		if strings.HasPrefix(line, "S:") {
			mode, line = ModeStrict, line[2:]
		}
		cfg := Config{Mode: mode}
		line = strings.ReplaceAll(line, `\n`, "\n")
		if strings.HasPrefix(line, "GO:") {
			switch line[3:] {
			case "brace":
				line = "echo " + strings.Repeat("{a,b}", 30)
			case "double":
				line = "x=a; " + strings.Repeat("x=$x$x; ", 40) + "echo $x"
			case "cands":
				var b strings.Builder
				for i := 0; i < 30; i++ {
					fmt.Fprintf(&b, "if a; then x%d=1; else x%d=2; fi; ", i, i)
				}
				b.WriteString("echo ")
				for i := 0; i < 30; i++ {
					fmt.Fprintf(&b, "$x%d", i)
				}
				line = b.String()
			case "subst":
				line = strings.Repeat("echo $(", 1000) + "ls" + strings.Repeat(")", 1000)
			case "pipe":
				line = "ls" + strings.Repeat(" | cat", 10000)
			case "list":
				line = strings.Repeat("ls; ", 50000) + "rm -rf /"
			case "func":
				var b strings.Builder
				for i := 0; i < 200; i++ {
					fmt.Fprintf(&b, "f%d(){ f%d; f%d; }; ", i, i+1, i+1)
				}
				b.WriteString("f0")
				line = b.String()
			}
		}
		p, _ := New(cfg)
		start := time.Now()
		d := p.Check(line)
		show := line
		if len(show) > 60 {
			show = show[:60] + "..."
		}
		fmt.Printf("%-8s %-64q -> %v %s [%.40s] %v\n", mode, show, d.Allowed, d.Rule, d.Match, time.Since(start).Round(time.Millisecond))
	}
}
