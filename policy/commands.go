package policy

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// command judges one simple command given as words: it looks through wrappers,
// recurses into nested scripts, and applies the layers in order.
func (c *checker) command(argv []word, ctx cmdContext, depth int) {
	saved := len(c.cwdSaved)
	c.judgeCommand(argv, ctx, depth)
	if len(c.cwdSaved) > saved {
		// env -C DIR ran the command in DIR: the script is where it was.
		c.cwd = c.cwdSaved[saved]
		c.cwdSaved = c.cwdSaved[:saved]
	}
}

// judgeCommand is command, but for the directory env -C changes for it.
func (c *checker) judgeCommand(argv []word, ctx cmdContext, depth int) {
	c.step()
	if depth > maxDepth {
		c.refuse(RuleTooComplex, joinWords(argv))
		return
	}
	if len(argv) > 1 && argv[0].s == "--" && !argv[0].dynamic {
		argv = argv[1:] // time -p -- CMD: bash's time keyword takes --
	} else if len(argv) > 1 && len(argv[0].s) > 1 && argv[0].s[0] == '-' && !argv[0].dynamic && isTimeOption(argv[0].s) {
		// time -f FMT CMD: the keyword takes no -f, but sh (dash) runs the
		// program time, with its options.
		argv = append([]word{{s: "time"}}, argv...)
	}
	if len(argv) == 0 {
		return
	}
	written, first := len(argv), argv[0]
	argv, name, entry, extra, excused, ok := c.unwrap(argv, &ctx)
	kind := entry.kind
	if c.envDirSet {
		// env -C DIR: the command runs in DIR, and the script goes on where
		// it was (command restores it).
		c.cwdSaved = append(c.cwdSaved, c.cwd)
		c.chdir([]word{{s: c.envDir}})
		c.envDir, c.envDirSet = "", false
	}
	if !ok || len(argv) == 0 || c.done() {
		return
	}
	if extra {
		// xargs appends what it reads: the literal text piped into it, or at least
		// the start paths of a find before it (the rest stays unknown).
		for _, s := range ctx.stdin {
			argv = append(argv, word{s: s})
		}
		extra = !ctx.stdinKnow
	}
	match := &commandText{name: name, argv: argv}
	if c.trace != nil {
		via := c.via
		if len(argv) < written && wrappers[commandName(first.s)].prog != nil {
			// Looked through a wrapper: the table's entry said where its command is.
			w := wrappers[commandName(first.s)]
			via = commandName(first.s) + " operand " + strconv.Itoa(w.positional+1) + ": a program and its arguments"
		}
		c.trace = append(c.trace, Step{Command: match.String(), Via: via})
	}

	if argv[0].dynamic || argv[0].glob {
		if len(argv) > 2 && argv[1].s == "-c" && !argv[2].dynamic {
			c.script(argv[2].s, depth+1) // "$SHELL" -c 'script': whatever runs it, judge the script
			if c.done() {
				return
			}
		}
		if argv[0].dynamic && c.fetchedText(argv[0].s) {
			c.refuse(RuleEvalFetched, match.String()) // $(curl ...) runs the downloaded words
			return
		}
		if c.strict() && !c.unboundPositional(argv[0]) {
			c.refuse(RuleDynamicCommand, match.String())
			return
		}
		if c.p.operatorDenies() {
			c.operatorDeny("", match.String(), nil)
		}
		return
	}
	if excused || len(c.p.allowPatterns) > 0 && c.allowed(match.String()) {
		// An allow pattern excuses this command only; the scripts it nests are
		// still judged.
		c.nested(name, kind, argv, &ctx, depth)
		return
	}
	switch name {
	case "cd", "pushd":
		c.chdir(argv[1:])
	case "popd":
		c.cwd = ""
	case "hash":
		c.hash(argv[1:])
	case "printf", "test", "[", "unset", "read", "mapfile", "readarray", "wait", "declare", "typeset", "local", "export", "readonly":
		// Names these builtins take may be array elements, whose subscripts
		// are arithmetic: printf -v 'a[$(cmd)]', test -v 'a[$(cmd)]'.
		for _, a := range argv[1:] {
			if k := strings.IndexByte(a.s, '['); !a.dynamic && k > 0 && envName(a.s[:k]) && (strings.Contains(a.s, "$(") || strings.IndexByte(a.s, '`') >= 0) {
				c.let(a.s, depth)
			}
		}
	}
	f, isFunc := c.function(name)
	// Only a call by the bare name, through no wrapper (env, command,
	// exec), can be a function's.
	isFunc = isFunc && len(argv) == written && strings.IndexByte(argv[0].s, '/') < 0 && c.shadows(f)
	if !isFunc || c.bombs[name] {
		// A function the script defines shadows the program of its name: its body
		// is what runs, and is judged with its arguments below.
		c.builtinRules(name, kind, argv, extra, match)
	}
	if c.done() {
		return
	}
	if isFunc && len(argv) > 1 && !c.inCall[name] {
		// f /: judge f's body again with its arguments bound.
		c.inCall[name] = true
		c.bindArgs(name, argv[1:])
		c.walk(f.src, f.body, depth+1)
		c.inCall[name] = false
		if c.done() {
			return
		}
	}
	if body, ok := c.alias(name); ok && !c.inCall["alias "+name] {
		c.inCall["alias "+name] = true
		c.script(strings.TrimSpace(body+" "+joinWords(argv[1:])), depth+1)
		c.inCall["alias "+name] = false
		if c.done() {
			return
		}
	}
	c.nested(name, kind, argv, &ctx, depth)
	if c.done() {
		return
	}
	if kind&(kindShell|kindWrapper) == 0 {
		// The table's model of the program: the words that are code.
		if prog := entry.prog; prog != nil {
			if len(prog.reads) > 0 && len(c.files) > 0 {
				if c.readFiles(prog, name, depth); c.done() {
					return
				}
			}
			if prog.filter != "" && prog.rest.role == roleWrite {
				c.copiesStdin(prog, argv, &ctx) // echo 'cmd' | tee x.sh
			}
			if prog.active {
				if c.programArgs(prog, name, argv, depth); c.done() {
					return
				}
			}
			if prog.partial && c.strict() && !isFunc && !c.hasAlias(name) {
				// The entry names only some of what the program does: its
				// arguments are read as an unknown program's are.
				if c.partialArgs(name, argv, depth); c.done() {
					return
				}
			}
			if prog.stdin.role == roleCode && (ctx.hereDoc != nil || ctx.stdinKnow) {
				// ed <<< '!cmd': the text on its stdin is code of its language.
				text := strings.Join(ctx.stdin, " ")
				if ctx.hereDoc != nil {
					text = *ctx.hereDoc
				}
				old := c.setVia(name, "stdin", prog.stdin)
				c.code(name, prog.stdin.lang, word{s: text}, depth)
				c.leaveVia(old, prog.stdin)
				if c.done() {
					return
				}
			}
		} else if c.strict() && kind == 0 && !isFunc && !c.hasAlias(name) {
			if c.unknownArgs(name, argv, depth); c.done() {
				return
			}
		}
	}
	if c.strict() && inlineCode(name, argv[1:]) && c.p.allowlist[name] == nil {
		c.refuse(RuleInlineCode, match.String())
		return
	}
	if c.p.operatorDenies() {
		c.operatorDeny(name, match.String(), argv[1:])
		if c.done() {
			return
		}
	}
	c.allowlisted(name, argv, match)
	if c.done() || len(c.p.roots) == 0 {
		return
	}
	for _, a := range argv[1:] {
		switch {
		case !a.dynamic:
			c.checkArgPath(a.s, match.String())
		case strings.HasPrefix(a.s, "$HOME") || strings.HasPrefix(a.s, "${HOME}") || strings.HasPrefix(a.s, `"$HOME`):
			c.checkPath("~", match.String()) // the home directory is never in the workspace
		}
	}
}

// isTimeOption reports whether s is one option of the program time, as
// its table entry names them (-f, -o, --format=...).
func isTimeOption(s string) bool {
	p := lookupProgram("time")
	key, _, _ := strings.Cut(s, "=")
	return p.long[key] != nil || len(s) == 2 && p.short[s[1]&127] != nil
}

// shadows reports whether the function f is what the call being judged
// runs: only a definition the shell surely made before the call, in the
// same shell. A definition in a subshell, a branch, a loop or a function
// body may not have been made; a definition after the call (in the same
// script) was not made yet; a new shell (sh -c, a program's command line)
// does not have the script's functions. So a function named like a
// dangerous program never lets a call of the program itself through.
func (c *checker) shadows(f funcDef) bool {
	if !f.sure || f.level != c.shellLevel {
		return false
	}
	return f.src != c.callSrc || c.callExpr == nil || c.callExpr.Pos().Offset() > f.pos
}

// unboundPositional reports whether w, a command name, is the positional
// parameters ("$@", "$1", ...) of a function's body judged outside any
// call: each call with arguments judges the body again with them bound
// (retry(){ "$@"; }; retry make test), and without arguments nothing runs.
func (c *checker) unboundPositional(w word) bool {
	if !c.inBody || len(c.vars) > 0 && (c.vars["@"] != nil || c.vars["1"] != nil) {
		return false
	}
	s := strings.Trim(w.s, `"{}$`)
	return s == "@" || s == "*" || len(s) == 1 && s[0] >= '1' && s[0] <= '9'
}

// unknownArgs judges, in strict mode, the arguments of a program the table
// does not know: each that parses as a command line is judged as one
// (unknowntool 'rm -rf /'), by the rules of both modes, since an unknown
// program may run any of its arguments.
func (c *checker) unknownArgs(name string, argv []word, depth int) {
	for i, a := range argv[1:] {
		s := a.s
		if a.dynamic || s == "" {
			continue
		}
		if strings.HasPrefix(s, "-") {
			_, v, ok := strings.Cut(s, "=")
			if !ok || v == "" {
				continue
			}
			s = v // --exec='rm -rf /'
		}
		if _, err := c.parse(s); err != nil {
			continue // not a command line
		}
		old := c.via
		if c.trace != nil {
			c.via = name + " argument " + strconv.Itoa(i+1) + ": not in the table of programs, read as a command line (strict)"
		}
		c.lenient++
		c.childScript(s, depth+1)
		c.lenient--
		c.via = old
		if c.done() {
			return
		}
	}
}

// partialArgs judges, in strict mode, the arguments of a program whose
// table entry is partial: as an unknown program's (unknownArgs), and each
// operand that names a program the table knows as that program with the
// words after it (cmake -E chdir build rm -rf /), by the rules of both modes.
func (c *checker) partialArgs(name string, argv []word, depth int) {
	if c.unknownArgs(name, argv, depth); c.done() {
		return
	}
	for i := 1; i < len(argv) && !c.done(); i++ {
		a := argv[i]
		if a.dynamic || a.s == "" || a.s[0] == '-' || entryOf(commandName(a.s)).kind == 0 && lookupProgram(commandName(a.s)) == nil {
			continue
		}
		old := c.via
		if c.trace != nil {
			c.via = name + " operand " + strconv.Itoa(i) + ": a partial entry of the table of programs, read as a program and its arguments (strict)"
		}
		c.lenient++
		c.childCommand(argv[i:], depth+1)
		c.lenient--
		c.via = old
		return // the first program named: the words after it are its own
	}
}

// hasAlias reports whether the script made an alias of name.
func (c *checker) hasAlias(name string) bool {
	_, ok := c.alias(name)
	return ok
}

// alias returns the text of an alias of name, if the script made one: most
// scripts make none, and the lookup in their empty map still cost a call for
// every command.
func (c *checker) alias(name string) (string, bool) {
	if len(c.aliases) == 0 {
		return "", false
	}
	body, ok := c.aliases[name]
	return body, ok
}

// chdir follows cd and pushd, so that later relative targets are read from
// where the script went (cd / && rm -rf *).
func (c *checker) chdir(args []word) {
	ops := operands(args)
	switch {
	case len(ops) == 0:
		c.cwd = "~"
	case ops[0].dynamic || ops[0].s == "-":
		c.cwd = ""
	case strings.HasPrefix(ops[0].s, "/") || strings.HasPrefix(ops[0].s, "~"):
		c.cwd = strings.TrimSuffix(cleanPath(ops[0].s), "/")
		if c.cwd == "" {
			c.cwd = "/"
		}
	default:
		// A relative directory: from CDPATH's first entry, when the script
		// set one (CDPATH=/ cd etc), else from where the script is.
		op := ops[0].s
		if cdpath := c.cdpath(); cdpath != "" && op != "." && op != ".." &&
			!strings.HasPrefix(op, "./") && !strings.HasPrefix(op, "../") {
			c.cwd = cleanPath(cdpath + "/" + op)
			return
		}
		c.cwd = cleanPath(c.dir() + "/" + op)
	}
}

// cdpath is the first directory of the CDPATH the script set, if it set one.
func (c *checker) cdpath() string {
	if len(c.vars) == 0 {
		return ""
	}
	vals, ok := c.vars.lookup("CDPATH")
	if !ok {
		return ""
	}
	for _, d := range strings.Split(vals[0], ":") {
		if strings.HasPrefix(d, "/") {
			return d
		}
	}
	return ""
}

// hash -p PATH NAME makes NAME run PATH: an alias, as far as judging goes.
func (c *checker) hash(args []word) {
	for i := 0; i+2 < len(args); i++ {
		if args[i].s == "-p" && !args[i+1].dynamic && !args[i+2].dynamic {
			c.aliases[args[i+2].s] = args[i+1].s
			return
		}
	}
}

// let evaluates its arguments as arithmetic, where an array subscript runs
// command substitutions: let 'x=a[$(rm -rf /)]'. An argument is judged as the
// double-quoted word it expands like.
func (c *checker) let(expr string, depth int) {
	if strings.Contains(expr, "$(") || strings.Contains(expr, "`") {
		c.script(`: "`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(expr)+`"`, depth+1)
	}
}

// commandText is the normalised text of a command ("rm -rf /"), for patterns and
// refusals; most commands need neither, so it is built on first use.
type commandText struct {
	name string
	argv []word
	s    string
}

func (t *commandText) String() string {
	if t.s == "" {
		if t.argv[0].dynamic {
			t.s = joinWords(t.argv)
		} else {
			t.s = strings.TrimSpace(t.name + " " + joinWords(t.argv[1:]))
		}
	}
	return t.s
}

func joinWords(ws []word) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0].s
	}
	n := len(ws) - 1
	for _, w := range ws {
		n += len(w.s)
	}
	var b strings.Builder
	b.Grow(n)
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.s)
	}
	return b.String()
}

// unwrap strips wrappers from argv and returns the command they run, with its
// program's name (commandName of its first word) and that name's kind, which
// unwrap has looked up already. extra is true
// when the command receives arguments only known at run time (xargs). excused is
// true when an operator allow pattern matched the command at some wrapper level
// ("sudo apt-get update"). ok is false when nothing runs (`command -v rm`) or a
// refusal was recorded.
func (c *checker) unwrap(argv []word, ctx *cmdContext) (cmd []word, name string, entry nameEntry, extra, excused, ok bool) {
	for range maxDepth {
		if len(argv) == 0 {
			return argv, "", nameEntry{}, extra, excused, true
		}
		base := commandName(argv[0].s)
		if argv[0].dynamic {
			return argv, base, entryOf(base), extra, excused, true
		}
		name := base
		if strings.HasPrefix(name, "ld-linux") || strings.HasPrefix(name, "ld-musl") || name == "ld.so" {
			name = "ld.so" // the dynamic loader runs the program it is given
		}
		entry := entryOf(name)
		kind := entry.kind
		if kind&kindStringRunner != 0 {
			if script, ok := stringRunner(name, argv[1:]); ok {
				// It hands a string to a shell: judge it as sh -c would.
				argv = []word{{s: "sh"}, {s: "-c"}, script}
				continue
			}
		}
		if kind&kindWrapper == 0 {
			return argv, base, entry, extra, excused, true // base is name: only ld.so's names are renamed, and ld.so is a wrapper
		}
		w := wrappers[name]
		if len(c.p.allowPatterns) > 0 && c.allowed(strings.TrimSpace(name+" "+joinWords(argv[1:]))) {
			return argv, base, entryOf(base), extra, true, true // excused as written: judge nothing below it
		}
		// A wrapper may itself be denied by the operator or a rule (sudo).
		if kind&kindPrivilege != 0 {
			c.refuse(RulePrivilege, strings.TrimSpace(name+" "+joinWords(argv[1:])))
			return nil, "", nameEntry{}, false, false, false
		}
		if c.p.operatorDenies() {
			if c.operatorDeny(name, joinWords(argv), argv[1:]); c.done() {
				return nil, "", nameEntry{}, false, false, false
			}
		}
		rest := argv[1:]
		if w.prog.multicall {
			if len(rest) == 0 || strings.HasPrefix(rest[0].s, "-") {
				return nil, "", nameEntry{}, false, false, false // busybox --list, --help: runs nothing
			}
			argv = rest
			continue
		}
		if len(w.prog.query) > 0 {
			for _, a := range rest {
				if slices.Contains(w.prog.query, a.s) {
					return nil, "", nameEntry{}, false, false, false // command -v: only prints what the name is
				}
			}
		}
		var split []word // env -S "cmd args"
		i := 0
		for i < len(rest) {
			a := rest[i]
			if a.dynamic {
				break
			}
			s := a.s
			if s == "--" {
				i++
				break
			}
			if w.prog.assigns && strings.Contains(s, "=") && !strings.HasPrefix(s, "-") {
				if k, v, _ := strings.Cut(s, "="); isCodeVar(k) {
					c.codeVar(k, v, 0)
				}
				i++ // NAME=VALUE
				continue
			}
			if w.prog.assigns && s == "-" { // env -: -i
				i++
				continue
			}
			if !strings.HasPrefix(s, "-") || s == "-" {
				break
			}
			if w.prog.numOption && len(s) > 1 && isDigits(s[1:]) {
				i++ // nice -10
				continue
			}
			o, key, value, next := w.prog.optionOf(s)
			takesValue := next
			if o != nil && (o.takes || o.arg.role != roleData) {
				v := word{s: value}
				if next && i+1 < len(rest) {
					v = rest[i+1]
				}
				if o.arg.role == roleSplit {
					split = append(split, shellFields(v.s)...) // env -S "cmd args"
				} else if o.arg.role == roleChdir {
					c.envDir, c.envDirSet = v.s, !v.dynamic // env -C DIR CMD: CMD runs in DIR
				} else if o.arg.role != roleData && o.arg.role != roleRest {
					// time -o FILE, strace -o FILE: the table's role of the value.
					if c.programWordOf(argv, name, key, o.arg, v, nil, 0); c.done() {
						return nil, "", nameEntry{}, false, false, false
					}
				}
			}
			i++
			if takesValue {
				i++
			}
		}
		if len(split) > 0 {
			argv = append(split, rest[min(i, len(rest)):]...)
			continue
		}
		for p := 0; p < w.positional && i < len(rest); p++ {
			i++
		}
		if i >= len(rest) && name == "parallel" {
			// parallel without a command runs the command lines it reads on
			// stdin, as a shell does.
			argv = []word{{s: "sh"}}
			continue
		}
		if i >= len(rest) {
			return nil, "", nameEntry{}, false, false, false // the wrapper alone runs nothing of concern
		}
		if w.prog.appends {
			extra = true
		}
		argv = rest[i:]
		if name == "parallel" {
			// parallel CMD ::: ARGS: the arguments are appended to the command.
			if k := slices.IndexFunc(argv, func(w word) bool { return w.s == ":::" || w.s == "::::" }); k >= 0 {
				argv = append(argv[:k:k], argv[k+1:]...)
			} else {
				extra = true
			}
		}
	}
	c.refuse(RuleTooComplex, joinWords(argv))
	return nil, "", nameEntry{}, false, false, false
}

// stringRunner returns the script a runner hands to a shell as a string:
// flock LOCK -c CMD, parallel ::: CMD... (each argument a command). ok is
// false when name is no such runner, or this use of it runs a program with
// arguments instead (flock LOCK CMD ARGS).
func stringRunner(name string, args []word) (word, bool) {
	var rest []word
	switch name {
	case "flock":
		for i, a := range args {
			if (a.s == "-c" || a.s == "--command") && i+1 < len(args) {
				return args[i+1], true
			}
		}
		return word{}, false
	case "parallel":
		if rest = lookupProgram(name).operandWords(args); len(rest) == 0 || rest[0].s != ":::" {
			return word{}, false
		}
		rest = rest[1:]
		script := word{}
		for i, a := range rest {
			if i > 0 {
				script.s += "\n"
			}
			script.s += a.s
			script.dynamic = script.dynamic || a.dynamic
		}
		return script, len(rest) > 0
	}
	return word{}, false
}

// unwrapQuiet strips wrappers without judging them, to name the command a
// pipeline stage runs.
func (c *checker) unwrapQuiet(argv []word) []word {
	// Every map a checker writes is its own here: a variable holding code run
	// by a wrapper (GIT_SSH_COMMAND='f(){ :; }') defines functions in it.
	quiet := &checker{p: &Policy{mode: c.p.mode}, vars: c.vars, bombs: c.bombs, funcs: map[string]funcDef{},
		aliases: map[string]string{}, inCall: map[string]bool{}, judged: map[string]int{},
		argsCache: map[*syntax.CallExpr][][]word{}}
	cmd, _, _, _, _, _ := quiet.unwrap(argv, &cmdContext{})
	if cmd == nil && len(argv) > 0 && kindOf(commandName(argv[0].s))&(kindPrivilege|kindWrapper) == kindPrivilege|kindWrapper {
		return argv[1:]
	}
	return cmd
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// shellFields splits env -S's string as a shell would split plain words.
func shellFields(s string) []word {
	var out []word
	for _, f := range ifsFields(s) {
		out = append(out, word{s: strings.Trim(f, `'"`)})
	}
	return out
}

// nameKind is what the tables above (and privilegeRunners) say of a program
// name, so that a command looks its name up once instead of once a table:
// those lookups were a tenth of judging a simple command.
type nameKind uint8

const (
	kindWrapper      nameKind = 1 << iota // in wrappers
	kindShell                             // shells[name]
	kindInterpreter                       // interpreters[name] != ""
	kindPrivilege                         // privilegeRunners[name]
	kindStringRunner                      // in stringRunners
)

// nameEntry is what the checker knows of a program name: its kind, and
// its entry in the table of programs. A command looks its name up once,
// for both: each lookup was a tenth of judging a simple command.
type nameEntry struct {
	kind nameKind
	prog *program
}

// nameEntries are the names that have a kind or an entry in the table.
var nameEntries = func() map[string]nameEntry {
	entries := map[string]nameEntry{}
	add := func(name string, k nameKind) {
		e := entries[name]
		e.kind |= k
		entries[name] = e
	}
	for name, p := range programs {
		e := entries[name]
		e.prog = p
		entries[name] = e
	}
	for name := range wrappers {
		add(name, kindWrapper)
	}
	for name, ok := range shells {
		if ok {
			add(name, kindShell)
		}
	}
	for name, opts := range interpreters {
		if opts != "" {
			add(name, kindInterpreter)
		}
	}
	for name, ok := range privilegeRunners {
		if ok {
			add(name, kindPrivilege)
		}
	}
	for _, name := range stringRunners {
		add(name, kindStringRunner)
	}
	return entries
}()

// kindFilter holds, for each length (modulo 32) and first byte, the last
// bytes (modulo 64, a bit each) of the names in nameEntries that have them:
// a name none of whose has an entry needs no hashing.
var kindFilter = func() (filter [32][256]uint64) {
	for name := range nameEntries {
		filter[len(name)%32][name[0]] |= lastByteBit(name)
	}
	return filter
}()

func lastByteBit(name string) uint64 { return 1 << (name[len(name)-1] % 64) }

// entryOf is nameEntries[name]. Nearly every command's name has an entry
// now (the table knows the everyday programs), so the filter lets most
// through, and they are found in entryTable, whose hash of a short name is
// cheaper than the map's.
func entryOf(name string) nameEntry {
	if name == "" || kindFilter[len(name)%32][name[0]]&lastByteBit(name) == 0 {
		return nameEntry{}
	}
	for i := nameHash(name) & (entrySlots - 1); ; i = (i + 1) & (entrySlots - 1) {
		slot := &entryTable[i]
		if slot.name == name {
			return slot.entry
		}
		if slot.name == "" {
			return nameEntry{}
		}
	}
}

// entrySlots is the size of entryTable: a power of two, several times the
// names, so that a lookup probes one or two slots.
const entrySlots = 4096

// entryTable is nameEntries as an open-addressed table keyed by nameHash.
var entryTable = func() *[entrySlots]struct {
	name  string
	entry nameEntry
} {
	var t [entrySlots]struct {
		name  string
		entry nameEntry
	}
	if len(nameEntries) > entrySlots/2 {
		panic("entryTable: too many names")
	}
	for name, e := range nameEntries {
		i := nameHash(name) & (entrySlots - 1)
		for t[i].name != "" {
			i = (i + 1) & (entrySlots - 1)
		}
		t[i].name, t[i].entry = name, e
	}
	return &t
}()

// nameHash is FNV-1a of a name.
func nameHash(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return h
}

// kindOf is nameEntries[name].kind.
func kindOf(name string) nameKind { return entryOf(name).kind }

// isFetcher reports whether the table says the program downloads what it
// prints (curl, wget).
func isFetcher(name string) bool {
	p := lookupProgram(name)
	return p != nil && p.fetches
}

// nested recurses into the scripts a command runs: sh -c, eval, trap, find -exec,
// xargs, and shells fed a here-document or piped text.
func (c *checker) nested(name string, kind nameKind, argv []word, ctx *cmdContext, depth int) {
	args := argv[1:]
	if kind&kindShell != 0 {
		c.shellNested(argv, ctx, depth)
		return
	}
	// One switch on the name: the names are distinct, and awk, an interpreter
	// too, has its own case, before the default's interpreters.
	switch name {
	case "at", "batch":
		// at reads the commands it schedules from stdin, unless -f names a file.
		for _, a := range args {
			if a.s == "-f" || shortFlag(a.s, 'f') || a.s == "-l" || a.s == "-r" || a.s == "-d" || a.s == "-c" {
				return
			}
		}
		c.stdinScript(argv, ctx, depth)
	case "source", ".":
		if len(args) > 0 {
			if !args[0].dynamic && isFdPath(args[0].s) {
				c.stdinScript(argv, c.fdContext(args[0].s, ctx), depth) // . /dev/stdin <<< 'script'
				return
			}
			if text, ok := c.fileText(args[0].s); ok && !args[0].dynamic {
				c.childScript(text, depth+1) // echo 'cmd' > x.sh; . x.sh
				return
			}
			c.procSubst(argv, args[0])
		}
	case "awk", "gawk", "mawk", "nawk":
		if program, ok := awkProgram(args); ok {
			for _, cmd := range awkCommands(program) {
				c.script(cmd, depth+1)
			}
		}
	case "sed", "gsed":
		for _, script := range sedScripts(args) {
			for _, cmd := range sedCommands(script) {
				c.script(cmd, depth+1)
			}
		}
	case "eval":
		if len(args) > 0 && args[0].s == "--" {
			args = args[1:]
		}
		var parts []string
		for _, a := range args {
			if a.dynamic {
				c.dynamicScript(argv, a, RuleEvalFetched)
				return
			}
			parts = append(parts, a.s)
		}
		c.script(strings.Join(parts, " "), depth+1)
	case "trap":
		if len(args) > 0 && args[0].s == "--" {
			args = args[1:]
		}
		if len(args) >= 2 && !strings.HasPrefix(args[0].s, "-") {
			if args[0].dynamic {
				c.dynamicScript(argv, args[0], RuleEvalFetched)
				return
			}
			c.script(args[0].s, depth+1)
		}
	case "find":
		for i := 0; i < len(args); i++ {
			switch args[i].s {
			case "-exec", "-execdir", "-ok", "-okdir":
				j := i + 1
				for j < len(args) && args[j].s != ";" && args[j].s != "+" {
					j++
				}
				if j > i+1 {
					c.childCommand(args[i+1:j], depth+1)
				}
				i = j
			}
		}
	default:
		if kind&kindInterpreter == 0 && name != "tclsh" {
			return
		}
		codeOpts := interpreters[name] // looked up once, not at each use below
		for i, a := range args {
			// python3 -c "$(curl ...)", perl -e "$(wget ...)": fetched code.
			if len(a.s) == 2 && a.s[0] == '-' && strings.IndexByte(codeOpts, a.s[1]) >= 0 &&
				i+1 < len(args) && args[i+1].dynamic && c.fetchedText(args[i+1].s) {
				c.refuse(RuleEvalFetched, joinWords(argv))
				return
			}
		}
		if script, ok := programArg(args, codeOpts); ok && script.dynamic {
			c.procSubst(argv, script) // python3 <(curl ...)
			return
		}
		if programFromStdin(args, codeOpts) && (ctx.piped || ctx.redirIn) {
			match := joinWords(argv)
			if ctx.pipeline != "" {
				match = ctx.pipeline
			}
			if ctx.fromFetch {
				c.refuse(RuleFetchPipe, match)
			} else if c.strict() {
				c.refuse(RulePipeShell, match)
			}
		}
	}
}

// shellNested judges what a shell runs: its -c string, its stdin, or the
// script file it reads.
func (c *checker) shellNested(argv []word, ctx *cmdContext, depth int) {
	args := argv[1:]
	script, mode := shellScript(args)
	switch mode {
	case "c":
		// sh -c 'script' a b: $0 and the positional parameters are the words after it.
		if k := slices.IndexFunc(args, func(w word) bool { return w == script }); k >= 0 && k+1 < len(args) {
			c.bindArgs(args[k+1].s, args[k+2:])
		}
		if script.dynamic {
			c.dynamicScript(argv, script, RuleFetchPipe)
			return
		}
		c.childScript(script.s, depth+1)
	case "stdin":
		c.stdinScript(argv, ctx, depth)
	case "file":
		switch {
		case !script.dynamic && isFdPath(script.s):
			c.stdinScript(argv, c.fdContext(script.s, ctx), depth) // bash /dev/fd/3 3<<<'script'
		case !script.dynamic && c.hasFileText(script.s):
			text, _ := c.fileText(script.s)
			c.childScript(text, depth+1) // echo 'cmd' > x.sh && sh x.sh
		case strings.HasPrefix(script.s, "<(") || strings.HasPrefix(script.s, "$("):
			c.procSubst(argv, script)
		}
	}
}

// isFdPath reports whether a script path reads an open file descriptor (a
// here-string, a here-document or a pipe): /dev/stdin, /dev/fd/N, /proc/self/fd/N.
func isFdPath(p string) bool {
	p = cleanPath(p)
	return p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// awkProgram returns awk's program text: the first operand, unless -f names a
// program file.
func awkProgram(args []word) (string, bool) {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case args[i].dynamic:
			return "", false
		case s == "-f" || strings.HasPrefix(s, "--file"):
			return "", false
		case s == "-v" || s == "-F":
			i++
		case s == "--":
			if i+1 < len(args) && !args[i+1].dynamic {
				return args[i+1].s, true
			}
			return "", false
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			return s, true
		}
	}
	return "", false
}

var (
	// awkSystem and awkPipe find the commands an awk program runs:
	// system("cmd"), print | "cmd", "cmd" | getline.
	awkSystem  = regexp.MustCompile(`system\s*\(\s*"((?:[^"\\]|\\.)*)"`)
	awkPipe    = regexp.MustCompile(`\|&?\s*"((?:[^"\\]|\\.)*)"`)
	awkGetline = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*\|&?\s*getline`)
	// awkRuns says an awk program runs commands at all.
	awkRuns = regexp.MustCompile(`\bsystem\s*\(|\|&?\s*("|[A-Za-z_])|\|&?\s*getline`)
)

// awkCommands returns the literal commands an awk program runs.
func awkCommands(program string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{awkSystem, awkPipe, awkGetline} {
		for _, m := range re.FindAllStringSubmatch(program, -1) {
			out = append(out, strings.ReplaceAll(m[1], `\"`, `"`))
		}
	}
	return out
}

// sedScripts returns sed's scripts: the -e and --expression values, or the
// first operand.
func sedScripts(args []word) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case args[i].dynamic:
			return out
		case (s == "-e" || s == "--expression") && i+1 < len(args):
			out = append(out, args[i+1].s)
			i++
		case strings.HasPrefix(s, "--expression="):
			out = append(out, s[len("--expression="):])
		case s == "-f" || s == "--file":
			i++
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			if len(out) == 0 {
				out = append(out, s)
			}
			return out
		}
	}
	return out
}

// sedExec finds GNU sed's e command, which runs the rest of its line: an
// address (a number, $, or a /regex/, or a range of them), then e and the command.
var sedExec = regexp.MustCompile(`(?m)(?:^|[;{}])\s*(?:(?:\d+|\$|/(?:[^/\\]|\\.)*/)(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/))?\s*!?\s*)?e[ \t]+([^;\n}]+)`)

// sedCommands returns the commands a sed script's e commands run. Every
// match of sedExec has an e followed by a space or a tab: a script without
// one (most: s/a/b/g) is not given to the regexp, which cost thousands of
// instructions a script.
func sedCommands(script string) []string {
	if !strings.Contains(script, "e ") && !strings.Contains(script, "e\t") {
		return nil
	}
	var out []string
	for _, m := range sedExec.FindAllStringSubmatch(script, -1) {
		out = append(out, m[1])
	}
	return out
}

// dynamicScript judges a script only known at run time: downloaded text is refused
// by fetchRule, anything else only in strict mode.
func (c *checker) dynamicScript(argv []word, script word, fetchRule Rule) {
	switch {
	case c.fetchedText(script.s):
		c.refuse(fetchRule, joinWords(argv))
	case c.strict():
		c.refuse(RuleDynamicCommand, joinWords(argv))
	}
}

// shellScript finds what a shell runs: the -c string ("c"), a script file
// ("file"), or stdin ("stdin").
func shellScript(args []word) (word, string) {
	cFlag := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			if cFlag {
				return a, "c"
			}
			return a, "file"
		}
		s := a.s
		switch {
		case s == "--" || s == "-":
			if cFlag && i+1 < len(args) {
				return args[i+1], "c"
			}
			if s == "-" || i+1 >= len(args) {
				return word{}, "stdin"
			}
			return args[i+1], "file"
		case s == "-o" || s == "+o" || s == "-O" || s == "+O" || s == "--rcfile" || s == "--init-file":
			i++
		case strings.HasPrefix(s, "--"):
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			if strings.ContainsRune(s[1:], 'c') && s[0] == '-' {
				cFlag = true
			}
			if strings.ContainsRune(s[1:], 's') && s[0] == '-' && !cFlag {
				return word{}, "stdin"
			}
		default:
			if cFlag {
				return a, "c"
			}
			if s == "/dev/stdin" || s == "/dev/fd/0" || s == "/proc/self/fd/0" {
				return word{}, "stdin"
			}
			return a, "file"
		}
	}
	if cFlag {
		return word{}, "none"
	}
	return word{}, "stdin"
}

// programArg returns an interpreter's script-file argument, if it has one.
func programArg(args []word, optsWithProgram string) (word, bool) {
	for _, a := range args {
		switch {
		case a.dynamic:
			return a, true
		case a.s == "-" || a.s == "--":
			return word{}, false
		case strings.HasPrefix(a.s, "-"):
			if len(a.s) > 1 && strings.ContainsAny(a.s[1:2], optsWithProgram) {
				return word{}, false
			}
		default:
			return a, true
		}
	}
	return word{}, false
}

// fetchedText reports whether the source of a dynamic word downloads: it runs curl
// or wget, or reads a variable the script filled from them.
func (c *checker) fetchedText(s string) bool {
	if strings.Contains(s, "curl") || strings.Contains(s, "wget") {
		return true
	}
	if !strings.Contains(s, "$") {
		return false
	}
	for _, name := range c.fetchedVars {
		if mentionsVar(s, name) {
			return true
		}
	}
	return false
}

// mentionsVar reports whether s holds "$"+name or "${"+name, without building
// them: at each $, whether name or {name follows.
func mentionsVar(s, name string) bool {
	for i := strings.IndexByte(s, '$'); i >= 0; {
		rest := s[i+1:]
		if strings.HasPrefix(rest, name) || strings.HasPrefix(rest, "{") && strings.HasPrefix(rest[1:], name) {
			return true
		}
		next := strings.IndexByte(rest, '$')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// programFromStdin reports whether an interpreter reads its program from stdin.
func programFromStdin(args []word, optsWithProgram string) bool {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case args[i].dynamic:
			return false
		case s == "-":
			return true
		case s == "--":
			return i+1 >= len(args) || args[i+1].s == "-"
		case strings.HasPrefix(s, "--"):
		case len(s) > 1 && s[0] == '-':
			if strings.ContainsAny(s[1:2], optsWithProgram) {
				return false // -c CODE, -e CODE, -m MODULE: the program is given
			}
		default:
			return false // a script file
		}
	}
	return true
}

// stdinScript judges a shell that reads its script from stdin.
func (c *checker) stdinScript(argv []word, ctx *cmdContext, depth int) {
	match := joinWords(argv)
	if ctx.pipeline != "" {
		match = ctx.pipeline
	}
	switch {
	case ctx.fromFetch:
		c.refuse(RuleFetchPipe, match)
		return
	case !ctx.piped && !ctx.redirIn:
		return // an interactive shell with the sandbox's closed stdin: nothing runs
	case c.strict():
		c.refuse(RulePipeShell, match)
		return
	}
	switch {
	case ctx.hereDoc != nil:
		c.childScript(*ctx.hereDoc, depth+1)
	case ctx.stdinText != nil:
		c.childScript(*ctx.stdinText, depth+1)
	case ctx.stdinKnow:
		c.childScript(strings.Join(ctx.stdin, " "), depth+1)
	}
}

// procSubst judges `sh <(curl ...)` and `source <(curl ...)`.
func (c *checker) procSubst(argv []word, arg word) {
	if !arg.dynamic {
		return
	}
	if strings.HasPrefix(arg.s, "<(") || strings.HasPrefix(arg.s, "$(") || strings.HasPrefix(arg.s, "`") {
		if c.fetchedText(arg.s) {
			c.refuse(RuleFetchPipe, joinWords(argv))
			return
		}
		if c.strict() {
			c.refuse(RulePipeShell, joinWords(argv))
			return
		}
		// sh <(echo 'cmd'): the script is the literal text echoed.
		if inner, ok := strings.CutPrefix(arg.s, "<("); ok && strings.HasSuffix(inner, ")") {
			inner = inner[:len(inner)-1]
			f, err := parse(inner)
			if err == nil && len(f.Stmts) == 1 {
				if call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr); ok {
					if text, ok := c.literalOutput(inner, call); ok {
						c.script(strings.Join(text, " "), maxDepth) // one level, no deeper
					}
				}
			}
		}
	}
}

// allowed reports whether an operator allow pattern matches the command.
func (c *checker) allowed(match string) bool {
	for _, re := range c.p.allowPatterns {
		if re.MatchString(match) {
			return true
		}
	}
	return false
}

// denyPatterns applies the operator's deny patterns to text.
func (c *checker) denyPatterns(text string) {
	for _, re := range c.p.denyPatterns {
		if re.MatchString(text) {
			c.refuse(RuleDenyPattern, text)
			return
		}
	}
}

// operatorDenies reports whether the operator denies any program or pattern:
// without, operatorDeny does nothing, and its match text need not be built.
func (p *Policy) operatorDenies() bool { return len(p.denyPrograms) > 0 || len(p.denyPatterns) > 0 }

// operatorDeny applies the operator's deny programs and patterns.
func (c *checker) operatorDeny(name, match string, args []word) {
	if res, ok := c.p.denyPrograms[name]; ok {
		joined := joinWords(args)
		for _, re := range res {
			if re == nil || re.MatchString(joined) {
				c.refuse(RuleDenyProgram, match)
				return
			}
		}
	}
	c.denyPatterns(match)
}

// allowlisted applies allowlist mode.
func (c *checker) allowlisted(name string, argv []word, match *commandText) {
	if c.p.allowlist == nil || harmlessBuiltins[name] || c.viaDepth > 0 {
		return
	}
	if shells[name] {
		if _, mode := shellScript(argv[1:]); mode == "c" {
			return // its script was judged command by command
		}
	}
	if p := lookupProgram(name); p != nil && p.restFrom > 0 && p.rest.role == roleWords && p.operands(argv[1:]) >= p.restFrom {
		return // ssh HOST CMD, watch CMD: like sh -c, its command line was judged command by command
	}
	prefixes, ok := c.p.allowlist[name]
	if !ok {
		c.refuse(RuleNotAllowed, match.String())
		return
	}
	for _, prefix := range prefixes {
		if prefix == nil || hasWordPrefix(argv[1:], prefix) {
			return
		}
	}
	c.refuse(RuleNotAllowed, match.String())
}

func hasWordPrefix(args []word, prefix []string) bool {
	if len(args) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if args[i].dynamic || args[i].s != p {
			return false
		}
	}
	return true
}
