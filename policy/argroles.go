package policy

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// role is what a word of a program's arguments is to the program (see
// programTable).
type role uint8

const (
	roleData    role = iota
	roleCmd          // a shell command line
	roleArgv         // a program and its arguments: this word and those after it
	roleRest         // an option after which the words are a program and its arguments
	roleWords        // this word and those after it, joined: a command line
	roleCSV          // a program and its arguments separated by commas
	roleCode         // code for an interpreter (lang)
	roleWrite        // a file written
	roleDir          // a directory written into
	roleDev          // a device written or formatted
	roleKV           // KEY=VALUE, VALUE a command line when KEY matches keys
	rolePrefix       // a command line after one of keys
	roleWPrefix      // a file written, after one of keys (dd of=)
	roleSplit        // a command line split into a program and its arguments (env -S)
	roleChdir        // the directory the command runs in (env -C)
)

// argRole is a role with what it needs: the language of code, the keys of
// a KEY=VALUE, the prefixes of a command line.
type argRole struct {
	role role
	lang string
	keys []string
}

// option is one option of a program: whether it takes a value, and the
// value's role.
type option struct {
	takes bool
	arg   argRole
}

// program is a compiled line of programTable.
type program struct {
	name  string
	short [128]*option
	long  map[string]*option // "--name" and "-name" (one dash, several letters)
	pos   []argRole          // the operands' roles, the first at 0
	// restFrom, when not zero, is the operand (1-based) from which every
	// operand has the role rest.
	restFrom int
	rest     argRole
	last     argRole // the last operand of two or more (cp's target)
	cfgKeys  []string
	posix    bool // options end at the first operand
	noDD     bool // "--" is an operand
	// noCluster: a word of one dash is one option (gcc -wrapper, -oFILE),
	// never a cluster of short ones.
	noCluster bool
	inplace   bool // -i/--in-place makes the operands written (sed)
	oldStyle  bool // the first word may be a cluster of options without its dash (tar cf)
	// stdin, when its role is code, is what the text fed to the program's
	// stdin is (ed <<< '!cmd', sqlite3 <<< '.shell cmd').
	stdin argRole
	subs  map[string]*program
	// filter names the function a filter computes of its stdin (follow.go),
	// and filterWhen the options that make it one ("" for always).
	filter     string
	filterWhen []string
	// reads are the files the program runs the text of (make its
	// makefile, git its hooks), as readsRole: the text the script wrote to
	// them is judged so (follow.go).
	reads     []string
	readsBase []string // each pattern's last component, "" if it is a glob
	readsRole argRole
	// assigns: the operands before the command may be NAME=VALUE, the
	// command's environment (env, cross-env).
	assigns bool
	// fetches: the program downloads what it prints (curl, wget), so that
	// a shell it pipes into runs downloaded text.
	fetches bool
	// runsSub: a subcommand runs a program (pyenv exec CMD), for subArgv.
	runsSub bool
	// multicall: the first operand names the program it is (busybox rm);
	// numOption: -N is an option (nice -10); appends: the command gets
	// what the program reads appended (xargs); query: options with which
	// it runs nothing (command -v).
	multicall, numOption, appends bool
	query                         []string
	// partial: the entry names only some of the program's options and
	// subcommands, so that in strict mode its operands are also read as a
	// program and its arguments (programs the table does not know are).
	partial bool
	// active is false for a program none of whose words is anything but
	// data: its words need no reading.
	active bool
}

// programs are the compiled table, by name ("git", "git rebase" under git's subs).
var programs = compilePrograms(programTable)

func compilePrograms(lines []string) map[string]*program {
	out := map[string]*program{}
	var subs []*program
	for _, line := range lines {
		names, spec, ok := strings.Cut(line, ":")
		if !ok {
			panic("programTable: no colon in " + strconv.Quote(line))
		}
		if strings.HasPrefix(line, ":,") || strings.HasPrefix(line, "echo,") {
			// The list of data programs holds ":" as a name.
			names, spec = line, ""
		}
		for _, name := range strings.Split(names, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			p := compileProgram(name, spec)
			if strings.Contains(name, " ") {
				subs = append(subs, p)
				continue
			}
			if out[name] != nil {
				panic("programTable: " + name + " twice")
			}
			out[name] = p
		}
	}
	// A parent before its subcommands: "uv tool" before "uv tool run".
	sort.SliceStable(subs, func(i, j int) bool {
		return strings.Count(subs[i].name, " ") < strings.Count(subs[j].name, " ")
	})
	for _, p := range subs {
		i := strings.LastIndexByte(p.name, ' ')
		parentName, sub := p.name[:i], p.name[i+1:]
		parent := lookupSub(out, parentName)
		if parent == nil {
			panic("programTable: " + p.name + " has no " + parentName)
		}
		if parent.subs == nil {
			parent.subs = map[string]*program{}
		}
		if parent.subs[sub] != nil {
			panic("programTable: " + p.name + " twice")
		}
		parent.subs[sub] = p
		if p.restFrom > 0 && p.rest.role == roleArgv {
			parent.runsSub = true
		}
	}
	// A program with an active subcommand is active.
	var mark func(p *program) bool
	mark = func(p *program) bool {
		for _, s := range p.subs {
			if mark(s) {
				p.active = true
			}
		}
		return p.active
	}
	for _, p := range out {
		mark(p)
	}
	return out
}

// lookupSub finds "a b c" among compiled programs and their subcommands.
func lookupSub(progs map[string]*program, name string) *program {
	words := strings.Fields(name)
	p := progs[words[0]]
	for _, w := range words[1:] {
		if p == nil {
			return nil
		}
		p = p.subs[w]
	}
	return p
}

func compileProgram(name, spec string) *program {
	p := &program{name: name, long: map[string]*option{}}
	for _, tok := range strings.Fields(spec) {
		key, val, hasVal := strings.Cut(tok, "=")
		switch {
		case tok == "posix":
			p.posix = true
		case tok == "nodd":
			p.noDD = true
		case tok == "nocluster":
			p.noCluster = true
		case key == "filter":
			p.filter = val
		case key == "reads":
			pats, r, _ := strings.Cut(val, "=")
			p.reads, p.readsRole = strings.Split(pats, "|"), parseRole(name, r)
			for _, pat := range p.reads {
				base := pat[strings.LastIndexByte(pat, '/')+1:]
				if strings.ContainsAny(base, "*?[") {
					base = ""
				}
				p.readsBase = append(p.readsBase, base)
			}
		case key == "when":
			p.filterWhen = strings.Split(val, "|")
		case tok == "assigns":
			p.assigns = true
		case tok == "fetches":
			p.fetches = true
		case tok == "multicall":
			p.multicall = true
		case tok == "numopt":
			p.numOption = true
		case tok == "appends":
			p.appends = true
		case key == "query":
			p.query = strings.Split(val, "|")
		case tok == "partial":
			p.partial = true
		case tok == "oldstyle":
			p.oldStyle = true
		case key == "stdin":
			p.stdin = parseRole(name, val)
		case tok == "inplace":
			p.inplace, p.active = true, true
		case key == "cfg":
			p.cfgKeys, p.active = strings.Split(val, "|"), true
		case key == "last":
			p.last = parseRole(name, val)
		case strings.HasPrefix(key, "-") && len(key) == 2:
			o := &option{takes: hasVal && val != "rest", arg: parseRole(name, val)}
			p.short[key[1]&127] = o
		case strings.HasPrefix(key, "-"):
			o := &option{takes: hasVal && val != "rest", arg: parseRole(name, val)}
			p.long[key] = o
		case strings.HasSuffix(key, "+"):
			n, err := strconv.Atoi(strings.TrimSuffix(key, "+"))
			if err != nil || n < 1 {
				panic("programTable: " + name + ": bad operand " + tok)
			}
			p.restFrom, p.rest = n, parseRole(name, val)
		default:
			n, err := strconv.Atoi(key)
			if err != nil || n < 1 {
				panic("programTable: " + name + ": bad word " + tok)
			}
			for len(p.pos) < n {
				p.pos = append(p.pos, argRole{})
			}
			p.pos[n-1] = parseRole(name, val)
		}
	}
	p.active = p.active || p.restFrom > 0 && p.rest.role != roleData || p.last.role != roleData
	for _, r := range p.pos {
		p.active = p.active || r.role != roleData
	}
	for _, o := range p.short {
		p.active = p.active || o != nil && o.arg.role != roleData
	}
	for _, o := range p.long {
		p.active = p.active || o.arg.role != roleData
	}
	return p
}

func parseRole(name, s string) argRole {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case "":
		return argRole{}
	case "cmd":
		return argRole{role: roleCmd}
	case "argv":
		return argRole{role: roleArgv}
	case "rest":
		return argRole{role: roleRest}
	case "words":
		return argRole{role: roleWords}
	case "csv":
		return argRole{role: roleCSV}
	case "write":
		return argRole{role: roleWrite}
	case "dir":
		return argRole{role: roleDir}
	case "dev":
		return argRole{role: roleDev}
	case "code":
		if codeLangs[arg] == nil {
			panic("programTable: " + name + ": no reader of code:" + arg)
		}
		return argRole{role: roleCode, lang: arg}
	case "kv":
		return argRole{role: roleKV, keys: strings.Split(strings.ToLower(arg), "|")}
	case "pfx":
		return argRole{role: rolePrefix, keys: strings.Split(arg, "|")}
	case "split":
		return argRole{role: roleSplit}
	case "chdir":
		return argRole{role: roleChdir}
	case "wpfx":
		return argRole{role: roleWPrefix, keys: strings.Split(arg, "|")}
	}
	panic("programTable: " + name + ": unknown role " + s)
}

// describe names a role for Explain ("a command line").
func (r argRole) describe() string {
	switch r.role {
	case roleCmd, roleWords, rolePrefix, roleKV:
		return "a command line"
	case roleArgv, roleRest, roleCSV:
		return "a program and its arguments"
	case roleCode:
		return r.lang + " code"
	case roleWrite, roleWPrefix, roleDir:
		return "a file written"
	case roleDev:
		return "a device"
	}
	return "data"
}

// lookupProgram returns the table's entry of name, nil if it has none.
func lookupProgram(name string) *program {
	if name == "" {
		return nil
	}
	return entryOf(name).prog // the filtered, open-addressed table: cheaper than the map
}

// wrapperSpec is what unwrap needs of a wrapper: the short and long options
// that take a value, and the operands before the command.
type wrapperSpec struct {
	prog       *program
	positional int
}

// wrappers are the programs of the table whose operands from some point on
// are a program and its arguments, and which are read with options first
// (posix): unwrap looks through them.
var wrappers = func() map[string]wrapperSpec {
	out := map[string]wrapperSpec{}
	for name, p := range programs {
		if p.posix && p.restFrom > 0 && p.rest.role == roleArgv {
			out[name] = wrapperSpec{prog: p, positional: p.restFrom - 1}
		}
	}
	return out
}()

// optionOf reads the option word s of p: the option, its key ("-o",
// "--output"), its value when the word holds it, and whether the value is
// the next word. o is nil for an option p does not name.
func (p *program) optionOf(s string) (o *option, key, value string, next bool) {
	k, v, hasEq := strings.Cut(s, "=")
	if o := p.long[k]; o != nil && (len(k) > 2) {
		switch {
		case !o.takes:
			return o, k, "", false
		case hasEq:
			return o, k, v, false
		}
		return o, k, "", true
	}
	if strings.HasPrefix(s, "--") {
		return nil, k, "", false
	}
	// A cluster of short options: the first that takes a value takes the
	// rest of the word, or the next word.
	last := len(s)
	if p.noCluster {
		last = min(len(s), 2)
	}
	for j := 1; j < last; j++ {
		o := p.short[s[j]&127]
		if o == nil || !o.takes && o.arg.role != roleRest {
			continue
		}
		if !o.takes {
			return o, "-" + s[j:j+1], "", false // watch -x CMD: the words after it
		}
		if j+1 < len(s) {
			return o, "-" + s[j:j+1], s[j+1:], false
		}
		return o, "-" + s[j:j+1], "", true
	}
	return nil, "", "", false
}

// operands counts the operands of args, as programArgs reads them.
func (p *program) operands(args []word) int {
	n, dashdash := 0, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !dashdash && !a.dynamic && len(a.s) > 1 && a.s[0] == '-' {
			if a.s == "--" && !p.noDD {
				dashdash = true
				continue
			}
			if _, _, _, next := p.optionOf(a.s); next {
				i++
			}
			continue
		}
		n++
		dashdash = dashdash || p.posix
	}
	return n
}

// wrapperTakes reports whether a wrapper's option word takes the next word
// as its value, for unwrap.
func (w wrapperSpec) takes(s string) bool {
	if w.prog == nil {
		return false
	}
	_, _, _, next := w.prog.optionOf(s)
	return next
}

// programArgs judges the words of a command by its program's entry in the
// table: each word the entry gives a role other than data is judged as what
// it is. argv[0] is the program; name is its name.
func (c *checker) programArgs(p *program, name string, argv []word, depth int) {
	args := argv[1:]
	dashdash := false
	operand := 0
	var ops [8]int // the operands' indexes, for last=
	opIdx := ops[:0]
	inplace := false
	sawScript := false
	for i := 0; i < len(args) && !c.done(); i++ {
		a := args[i]
		if i == 0 && p.oldStyle && !a.dynamic && a.s != "" && a.s[0] != '-' {
			a.s = "-" + a.s // tar cf FILE: the first word is a cluster of options
		}
		if !dashdash && !a.dynamic && len(a.s) > 1 && a.s[0] == '-' {
			if a.s == "--" && !p.noDD {
				dashdash = true
				continue
			}
			if p.inplace && (a.s == "--in-place" || shortFlag(a.s, 'i') && !strings.HasPrefix(a.s, "--") ||
				strings.HasPrefix(a.s, "--in-place=")) {
				inplace = true
			}
			o, key, value, next := p.optionOf(a.s)
			if o == nil {
				continue
			}
			if o.takes && (key == "-e" || key == "-f" || key == "--expression" || key == "--file") {
				sawScript = true
			}
			if o.arg.role == roleRest {
				c.programWords(name, key, o.arg, args[i+1:], depth)
				return
			}
			if !o.takes {
				continue
			}
			v := word{s: value}
			if next {
				if i+1 >= len(args) {
					return
				}
				i++
				v = args[i]
			}
			if o.arg.role != roleData {
				c.programWordOf(argv, name, key, o.arg, v, args[i+1:], depth)
			}
			continue
		}
		if operand == 0 && !a.dynamic && p.subs != nil {
			if sub := p.subs[a.s]; sub != nil {
				if sub.active {
					c.programArgs(sub, sub.name, args[i:], depth) // its name is "git rebase": no string to build
				}
				return
			}
		}
		operand++
		if len(opIdx) < cap(opIdx) {
			opIdx = append(opIdx, i)
		}
		if p.posix {
			dashdash = true
		}
		r := argRole{}
		switch {
		case operand <= len(p.pos):
			r = p.pos[operand-1]
		case p.restFrom > 0 && operand >= p.restFrom:
			r = p.rest
		}
		if p.cfgKeys != nil && operand == 1 && i+1 < len(args) {
			if keyMatches(strings.ToLower(a.s), p.cfgKeys) {
				c.programWord(name, a.s, argRole{role: roleCmd}, args[i+1], nil, depth)
			}
		}
		if r.role == roleData {
			continue
		}
		key := "operand " + strconv.Itoa(operand)
		if r.role == roleArgv || r.role == roleWords {
			c.programWords(name, key, r, args[i:], depth)
			return
		}
		c.programWordOf(argv, name, key, r, a, args[i+1:], depth)
	}
	if c.done() {
		return
	}
	if p.last.role != roleData && operand >= 2 && operand <= len(opIdx) {
		dest := args[opIdx[operand-1]]
		c.programWordOf(argv, name, "last operand", p.last, dest, nil, depth)
		if src := args[opIdx[0]]; !c.done() && p.last.role == roleWrite && !dest.dynamic && !src.dynamic && !alwaysPass[cleanPath(dest.s)] {
			// The target may be a directory (cp x /etc/, rsync -a ./etc/ /etc/):
			// what is written is then the source's name in it.
			base := path.Base(src.s)
			if base == "." || base == "/" || base == ".." {
				base = "x"
			}
			c.programWordOf(argv, name, "last operand", p.last, word{s: strings.TrimSuffix(dest.s, "/") + "/" + base}, nil, depth)
		}
	}
	if inplace {
		for k, idx := range opIdx {
			if k == 0 && !sawScript {
				continue // the script
			}
			c.programWordOf(argv, name, "-i", argRole{role: roleWrite}, args[idx], nil, depth)
		}
	}
}

// setVia enters the judging of words the table's entry of name gives the
// role r: Explain's steps name the entry, and the operator's allowlist,
// which let the program through (or refuses it after), is not asked about
// the programs it runs (npx eslint, git -c core.pager=less), but for a
// command line in its operands, which it judges as it judges sh -c's. The
// old via is for leaveVia.
func (c *checker) setVia(name, key string, r argRole) string {
	old := c.via
	if r.role != roleWords {
		c.viaDepth++ // ssh HOST CMD, watch CMD: the allowlist judges CMD, as it would of sh -c CMD
	}
	if c.trace != nil {
		c.via = name + " " + key + ": " + r.describe()
	}
	return old
}

// leaveVia ends what setVia began.
func (c *checker) leaveVia(old string, r argRole) {
	c.via = old
	if r.role != roleWords {
		c.viaDepth--
	}
}

// programWords judges words that are a program and its arguments, or a
// command line spread over several words.
func (c *checker) programWords(name, key string, r argRole, words []word, depth int) {
	if len(words) == 0 {
		return
	}
	old := c.setVia(name, key, r) // no defer: a panic ends the check, and its checker is not reused
	if r.role == roleWords {
		script := word{s: joinWords(words)}
		for _, w := range words {
			script.dynamic = script.dynamic || w.dynamic
		}
		c.commandLine(name, script, depth)
	} else {
		c.childCommand(words, depth+1)
	}
	c.leaveVia(old, r)
}

// programWord judges one word of the role r.
func (c *checker) programWord(name, key string, r argRole, w word, after []word, depth int) {
	c.programWordOf(nil, name, key, r, w, after, depth)
}

// programWordOf is programWord with the whole command, for the text of a
// refusal (nil: the program's name and the word).
func (c *checker) programWordOf(whole []word, name, key string, r argRole, w word, after []word, depth int) {
	old := c.setVia(name, key, r) // no defer: a panic ends the check, and its checker is not reused
	c.judgeWord(whole, name, r, w, after, depth)
	c.leaveVia(old, r)
}

// judgeWord judges a word of the role r, for programWordOf.
func (c *checker) judgeWord(whole []word, name string, r argRole, w word, after []word, depth int) {
	switch r.role {
	case roleCmd:
		c.commandLine(name, w, depth)
	case roleKV:
		if w.dynamic {
			c.commandLine(name, w, depth)
			return
		}
		k, v, ok := strings.Cut(w.s, "=")
		if !ok {
			k, v, ok = strings.Cut(w.s, " ")
		}
		if ok && keyMatches(strings.ToLower(strings.TrimSpace(k)), r.keys) {
			c.commandLine(name, word{s: strings.Trim(strings.TrimSpace(v), `{}";`)}, depth)
		}
	case rolePrefix:
		if w.dynamic {
			c.commandLine(name, w, depth)
			return
		}
		for _, pfx := range r.keys {
			if len(w.s) >= len(pfx) && strings.EqualFold(w.s[:len(pfx)], pfx) {
				c.commandLine(name, word{s: w.s[len(pfx):]}, depth)
				return
			}
		}
	case roleCSV:
		if w.dynamic {
			c.commandLine(name, w, depth)
			return
		}
		var argv []word
		for _, f := range strings.Split(w.s, ",") {
			argv = append(argv, word{s: f})
		}
		c.childCommand(argv, depth+1)
	case roleArgv:
		c.childCommand(append([]word{w}, after...), depth+1)
	case roleCode:
		c.code(name, r.lang, w, depth)
	case roleWrite:
		c.writeArg(whole, name, w)
	case roleDir:
		if !w.dynamic {
			c.writeArg(whole, name, word{s: strings.TrimSuffix(w.s, "/") + "/x"})
		}
	case roleWPrefix:
		for _, pfx := range r.keys {
			if v, ok := strings.CutPrefix(w.s, pfx); ok && !w.dynamic {
				c.writeArg(whole, name, word{s: v})
			}
		}
	case roleDev:
		// Formatting and partitioning are judged by builtinRules, which knows
		// the dry runs and the listings.
	}
}

// writeArg judges a file a program writes; whole, when not nil, is the
// command a refusal shows.
func (c *checker) writeArg(whole []word, name string, w word) {
	if w.dynamic {
		return
	}
	if rule, ok := c.writeRule(w.s); ok {
		if whole != nil {
			c.refuse(rule, joinWords(whole))
		} else {
			c.refuse(rule, name+" "+w.s)
		}
	}
}

// commandLine judges a string a program hands to a shell.
func (c *checker) commandLine(name string, w word, depth int) {
	if w.dynamic {
		c.dynamicScript([]word{{s: name}, w}, w, RuleEvalFetched)
		return
	}
	c.childScript(strings.TrimPrefix(strings.TrimSpace(w.s), "!"), depth+1)
}

// childCommand judges a program another program runs: a new process, in
// which the script's functions are not defined.
func (c *checker) childCommand(argv []word, depth int) {
	c.shellLevel++
	c.command(argv, cmdContext{}, depth)
	c.shellLevel--
}

// childScript judges a script a new shell runs, in which the script's
// functions are not defined (sh -c, a program's command line).
func (c *checker) childScript(src string, depth int) {
	c.shellLevel++
	c.script(src, depth)
	c.shellLevel--
}

// keyMatches reports whether a lower-case key matches one of the globs.
func keyMatches(key string, globs []string) bool {
	for _, g := range globs {
		if g == key {
			return true
		}
		if strings.ContainsAny(g, "*?[") {
			if ok, _ := path.Match(g, key); ok {
				return true
			}
		}
	}
	return false
}

// describeProgram is for tests and docs: a one-line account of an entry.
func describeProgram(p *program) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", p.name)
	for i, r := range p.pos {
		if r.role != roleData {
			fmt.Fprintf(&b, " operand %d is %s;", i+1, r.describe())
		}
	}
	if p.restFrom > 0 && p.rest.role != roleData {
		fmt.Fprintf(&b, " operands from %d are %s;", p.restFrom, p.rest.describe())
	}
	return b.String()
}

// subArgv is, for a command whose table entry has a subcommand that runs a
// program (pyenv exec CMD, uv run CMD), that program and its arguments;
// nil if it has none.
func subArgv(argv []word) []word {
	if len(argv) < 2 || argv[1].dynamic {
		return nil
	}
	p := lookupProgram(commandName(argv[0].s))
	if p == nil || p.subs == nil {
		return nil
	}
	sub := p.subs[argv[1].s]
	if sub == nil || sub.restFrom == 0 || sub.rest.role != roleArgv {
		return nil
	}
	operand := 0
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		if a.dynamic {
			return nil
		}
		if a.s == "--" {
			continue
		}
		if len(a.s) > 1 && a.s[0] == '-' {
			if o, _, _, next := sub.optionOf(a.s); o != nil && next {
				i++
			}
			continue
		}
		operand++
		if operand == sub.restFrom {
			return argv[i:]
		}
	}
	return nil
}

// operandWords returns args from the first operand on, reading the options
// before it by p's entry (which take a value, in the word or the next).
func (p *program) operandWords(args []word) []word {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.dynamic:
			return args[i:]
		case a.s == "--" && !p.noDD:
			return args[i+1:]
		case len(a.s) > 1 && a.s[0] == '-':
			if o, _, _, next := p.optionOf(a.s); o != nil && next {
				i++
			}
		default:
			return args[i:]
		}
	}
	return nil
}
