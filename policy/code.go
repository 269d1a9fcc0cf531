package policy

import (
	"strings"
)

// codeLang is what the checker knows of a language whose code a program
// takes in an argument: how that code runs shell commands, so that the
// commands are judged, and whether it is a general-purpose language, whose
// inline code strict mode refuses (no static check reads it all).
type codeLang struct {
	general bool
	// calls: the language runs a command given as a string literal to a
	// call (system("..."), os.execute("..."), exec "...").
	calls bool
	// backticks: `...` runs a command (perl, ruby, php, julia).
	backticks bool
	// markers start a command line that runs to the end of its line (or to
	// one of ends), where a statement starts: "!" in gdb, "\\!" in psql.
	markers []string
	ends    string
	// brackets start a command line that runs to the matching bracket:
	// "execute(" in fzf, "\\write18{" in TeX.
	brackets []string
	// trim are the bytes a command line found starts with that are not the
	// command's: make's recipe prefixes (-reboot, @reboot).
	trim string
	// ruleRecipe: a line "TARGETS: PREREQUISITES ; RECIPE" runs its
	// recipe (make's rule on one line).
	ruleRecipe bool
}

// codeLangs are the languages of the table's code:LANG roles.
var codeLangs = map[string]*codeLang{
	"python":      {general: true, calls: true},
	"perl":        {general: true, calls: true, backticks: true},
	"ruby":        {general: true, calls: true, backticks: true},
	"js":          {general: true, calls: true},
	"php":         {general: true, calls: true, backticks: true},
	"lua":         {general: true, calls: true},
	"r":           {general: true, calls: true},
	"julia":       {general: true, calls: true, backticks: true},
	"applescript": {general: true, calls: true},
	"tcl":         {general: true, calls: true, markers: []string{"exec ", "spawn "}, ends: "\n;]"},
	"octave":      {general: true, calls: true},
	"haskell":     {general: true, calls: true},
	"lisp":        {general: true, calls: true},
	"slang":       {general: true, calls: true},
	"puppet":      {general: true, calls: true},
	"rpm":         {general: true, calls: true, brackets: []string{"%("}},
	"make":        {markers: []string{"\t"}, ends: "\n", ruleRecipe: true, brackets: []string{"$(shell ", "${shell "}, trim: "-@+ \t"},
	"tex":         {brackets: []string{"\\write18{"}, calls: true},
	"fzf": {brackets: []string{"execute(", "execute-silent(", "execute-multi(", "become(", "reload(", "reload-sync(",
		"preview(", "change-preview(", "transform(", "transform-query(", "transform-header(", "transform-prompt(",
		"execute[", "execute-silent[", "become[", "reload[", "execute{", "become{", "reload{", "execute<", "become<"},
		markers: []string{"execute:", "execute-silent:", "become:", "reload:", "preview:"}, ends: ","},
	"gdb":    {markers: []string{"!", "shell ", "pipe "}, ends: "\n", calls: true},
	"lldb":   {markers: []string{"platform shell ", "shell ", "!"}, ends: "\n"},
	"sqlite": {markers: []string{".shell ", ".system ", ".once |", ".output |", ".once '|", ".import '|"}, ends: "\n"},
	"mysql":  {markers: []string{"\\! ", "\\!", "system "}, ends: "\n"},
	"psql":   {markers: []string{"\\! ", "\\!", "\\o |", "\\g |", "\\setenv "}, ends: "\n"},
	"vim": {markers: []string{"!", "silent !", "silent! !", "r !", "r!", "w !", "w!", "read !", "write !", "terminal ", "term "}, ends: "\n|",
		calls: true},
	"bang": {markers: []string{"!", "shell "}, ends: "\n"},
	"dc":   {markers: []string{"!"}, ends: "\n"},
}

// code judges code handed to an interpreter of lang: strict refuses a
// general language's inline code (unless the operator allows the program),
// and the commands the code is seen to run are judged in both modes.
func (c *checker) code(name, lang string, w word, depth int) {
	l := codeLangs[lang]
	if w.dynamic {
		c.dynamicScript([]word{{s: name}, w}, w, RuleEvalFetched)
		return
	}
	if l.general && c.strict() && c.p.allowlist[name] == nil {
		c.refuse(RuleInlineCode, name+" "+w.s)
		return
	}
	for _, cmd := range codeCommands(l, w.s) {
		if c.done() {
			return
		}
		if cmd.argv != nil {
			c.childCommand(cmd.argv, depth+1)
			continue
		}
		line := cmd.line
		if l.trim != "" {
			line = strings.TrimLeft(line, l.trim)
		}
		c.childScript(line, depth+1)
	}
}

// codeCommand is a command some code runs: a command line, or a program
// and its arguments (system("rm", "-rf", "/")).
type codeCommand struct {
	line string
	argv []word
}

// callNames are the calls that run a command given as a string, as the
// languages spell them: system("..."), os.execute("..."), exec "...",
// subprocess.run([...]). They are found by a scan, not a regexp: the scan
// costs a tenth of what the regexp did on the corpus's inline code.
var callNames = []string{
	"system", "exec", "execl", "execlp", "execv", "execvp", "execute", "popen", "popen2", "popen3", "Popen",
	"spawn", "spawnSync", "execSync", "execFile", "execFileSync", "exec_command", "shell_exec", "passthru",
	"proc_open", "callCommand", "readProcess", "check_output", "check_call", "call", "run", "getoutput",
	"getstatusoutput", "run-shell-command", "shell-command", "call-process", "start-process", "term", "qx",
	"shell", "runCommand", "capture2", "capture3", "capture2e", "spawn_command", "do shell script",
}

// callStrings appends to out the commands of the calls in code.
func callStrings(out []codeCommand, code string) []codeCommand {
	for _, name := range callNames {
		for from := 0; from < len(code); {
			i := strings.Index(code[from:], name)
			if i < 0 {
				break
			}
			i += from
			from = i + len(name)
			if i > 0 && identByte(code[i-1]) || from < len(code) && identByte(code[from]) {
				continue // a longer name: execSync is not exec
			}
			rest := strings.TrimLeft(code[from:], " \t\n({[")
			strs := leadingStrings(rest)
			switch len(strs) {
			case 0:
			case 1:
				out = append(out, codeCommand{line: strs[0]})
			default:
				argv := make([]word, len(strs))
				for i, s := range strs {
					argv[i] = word{s: s}
				}
				out = append(out, codeCommand{argv: argv})
			}
		}
	}
	return out
}

// identByte reports whether b may be part of a name in code.
func identByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// codeCommands returns the commands code of a language is seen to run.
func codeCommands(l *codeLang, code string) []codeCommand {
	var out []codeCommand
	if l.calls && mayCall(code) {
		out = callStrings(out, code)
	}
	if l.backticks {
		rest := code
		for {
			i := strings.IndexByte(rest, '`')
			if i < 0 {
				break
			}
			j := strings.IndexByte(rest[i+1:], '`')
			if j < 0 {
				break
			}
			out = append(out, codeCommand{line: rest[i+1 : i+1+j]})
			rest = rest[i+j+2:]
		}
	}
	for _, m := range l.markers {
		for from := 0; ; {
			i := strings.Index(code[from:], m)
			if i < 0 {
				break
			}
			i += from
			from = i + len(m)
			if !atStatement(code, i) {
				continue
			}
			end := len(code)
			if k := strings.IndexAny(code[from:], l.ends); k >= 0 {
				end = from + k
			}
			out = append(out, codeCommand{line: code[from:end]})
		}
	}
	if l.ruleRecipe {
		for _, line := range strings.Split(code, "\n") {
			colon := strings.IndexByte(line, ':')
			if colon < 0 || strings.HasPrefix(line[colon:], ":=") || strings.HasPrefix(line, "\t") {
				continue
			}
			if semi := strings.IndexByte(line[colon:], ';'); semi >= 0 {
				out = append(out, codeCommand{line: line[colon+semi+1:]})
			}
		}
	}
	for _, b := range l.brackets {
		open := b[len(b)-1]
		close := closing(open)
		for from := 0; ; {
			i := strings.Index(code[from:], b)
			if i < 0 {
				break
			}
			from = i + from + len(b)
			depth, end := 1, len(code)
			for k := from; k < len(code); k++ {
				switch code[k] {
				case open:
					depth++
				case close:
					depth--
				}
				if depth == 0 {
					end = k
					break
				}
			}
			out = append(out, codeCommand{line: code[from:end]})
		}
	}
	return out
}

// mayCall reports whether code may hold a call callRe finds: most code of
// the forms the checker sees (print(1)) calls nothing that runs a command.
func mayCall(code string) bool {
	return strings.ContainsAny(code, `"'`)
}

// atStatement reports whether code[i] starts a statement: at the start, or
// after a newline, a semicolon, a colon, a bracket or a pipe, with blanks
// between.
func atStatement(code string, i int) bool {
	for i > 0 {
		switch code[i-1] {
		case ' ', '\t':
			i--
			continue
		case '\n', ';', ':', '[', '{', '(', '|', '\'', '"':
			return true
		}
		return false
	}
	return true
}

// leadingStrings returns the string literals at the start of s, separated
// by commas (and the brackets of a list): the arguments of a call.
func leadingStrings(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t\n[(")
		if s == "" {
			return out
		}
		q := s[0]
		if q != '"' && q != '\'' && q != '`' {
			return out
		}
		end := -1
		for k := 1; k < len(s); k++ {
			if s[k] == '\\' && q != '`' {
				k++
				continue
			}
			if s[k] == q {
				end = k
				break
			}
		}
		if end < 0 {
			return out
		}
		out = append(out, unquoteCode(s[1:end]))
		s = strings.TrimLeft(s[end+1:], " \t\n")
		if !strings.HasPrefix(s, ",") {
			return out
		}
		s = s[1:]
	}
}

// unquoteCode removes the backslashes of a string literal's escapes.
func unquoteCode(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// closing is the bracket that closes open.
func closing(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '{':
		return '}'
	case '[':
		return ']'
	}
	return '>'
}
