package policy

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"mvdan.cc/sh/v3/syntax"
)

// MaxCommandBytes bounds what Check and CheckArgv parse: a larger command (or
// argv, all its words together) is refused at once, unread, as too-large. A run
// cannot take more anyway (the kernel's limit on one argument is 128 KiB).
const MaxCommandBytes = 1 << 20

// tooLarge is the refusal of a command over MaxCommandBytes.
func (p *Policy) tooLarge(n int) Decision {
	return Decision{Rule: RuleTooLarge.ID, Reason: RuleTooLarge.Reason + ": " + strconv.Itoa(n) + " bytes, over the limit of " +
		strconv.Itoa(MaxCommandBytes), Mode: p.mode}
}

// Check judges a shell command as `sh -c command` would run it.
func (p *Policy) Check(command string) (d Decision) {
	if p.mode == ModeOff {
		return Decision{Allowed: true, Mode: p.mode}
	}
	if len(command) > MaxCommandBytes {
		return p.tooLarge(len(command))
	}
	c := p.newChecker()
	defer c.finish(&d, nil)
	c.script(command, 0)
	return c.decision()
}

// Step is one simple command the checker judged: its words after quote
// removal, wrapper stripping and expansion, and the rule that refused it, if
// one did. A refusal of a redirect or an assignment is a step of its own.
type Step struct {
	Command string `json:"command"`
	// Via names the entry of the table of programs, and the word of it,
	// that made the command judged as code ("cpulimit operand 1: a program
	// and its arguments"); empty for a command of the script itself.
	Via    string `json:"via,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Explain judges command as Check does and also returns the steps: every
// simple command the checker saw, in order, so that an operator can see why a
// command was refused (or allowed) without reading the checker's code.
func (p *Policy) Explain(command string) (d Decision, steps []Step) {
	if p.mode == ModeOff || len(command) > MaxCommandBytes {
		return p.Check(command), nil
	}
	c := p.newChecker()
	defer c.finish(&d, &steps)
	c.trace = []Step{}
	c.script(command, 0)
	d = c.decision() // before the trace is read: it may add the last step's rule
	return d, c.trace
}

// ExplainArgv is Explain for an argv executed directly (CheckArgv).
func (p *Policy) ExplainArgv(argv []string) (d Decision, steps []Step) {
	if p.mode == ModeOff || len(argv) == 0 || argvBytes(argv) > MaxCommandBytes {
		return p.CheckArgv(argv), nil
	}
	c := p.newChecker()
	defer c.finish(&d, &steps)
	c.trace = []Step{}
	c.command(argvWords(argv), cmdContext{}, 0)
	d = c.decision() // before the trace is read: it may add the last step's rule
	return d, c.trace
}

// CheckArgv judges an argv executed directly, without a shell: its words are
// literal, so only the program and its arguments are judged (and, for `sh -c`,
// the script).
func (p *Policy) CheckArgv(argv []string) (d Decision) {
	if p.mode == ModeOff || len(argv) == 0 {
		return Decision{Allowed: true, Mode: p.mode}
	}
	if n := argvBytes(argv); n > MaxCommandBytes {
		return p.tooLarge(n)
	}
	c := p.newChecker()
	defer c.finish(&d, nil)
	c.command(argvWords(argv), cmdContext{}, 0)
	return c.decision()
}

// argvWords are an argv's words: literal, as no shell reads them.
func argvWords(argv []string) []word {
	words := make([]word, len(argv))
	for i, a := range argv {
		words[i] = word{s: a}
	}
	return words
}

func argvBytes(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	return n
}

// checker holds the state of one Check: the script's variables and functions, and
// the first refusal. It stops at the first refusal.
type checker struct {
	p           *Policy
	vars        vars
	bombs       map[string]bool    // functions that spawn copies of themselves
	funcs       map[string]funcDef // the script's functions, judged again with each call's arguments
	funcNames   nameFilter         // the names in funcs, to look up only names that may be there
	aliases     map[string]string  // alias name -> its text
	inCall      map[string]bool    // functions being judged with arguments, against recursion
	fetchedVars []string           // variables assigned the output of curl or wget
	judged      map[string]int     // scripts already judged, at the binding generation
	first       string             // the first script judged, kept out of judged
	firstGen    int                // the generation first was judged at
	firstJudged bool               // first is set
	generation  int                // counts rebindings of $1..$9 by function calls
	// argsCache holds each simple command's expansions, reset when bindings change.
	argsCache map[*syntax.CallExpr][][]word
	// cachedCalls filters the calls in argsCache, so that the simple commands
	// outside pipelines, most of them, skip the map's lookup.
	cachedCalls callFilter
	refusal     *Decision
	steps       int
	// cwd is the directory the script moved to (cd /), for relative targets;
	// empty while it is the sandbox's working directory.
	cwd string
	// trace, when not nil, records the steps (Explain).
	trace []Step
	// shellLevel counts the new shells and processes the words being
	// judged run in (sh -c, a program's command line): a function is
	// defined only in the shell that defined it (shadows).
	shellLevel int
	// callSrc and callPos are the script and offset of the simple command
	// being judged, to tell a call before a function's definition.
	callSrc  string
	callExpr *syntax.CallExpr
	// outSubsts: a script of the check has an output process substitution
	// (collect saw one), so call looks for them in its arguments.
	outSubsts bool
	// outFed are the commands of output process substitutions of
	// arguments (tee >(sh)), with the command that writes to them.
	outFed map[*syntax.CallExpr]string
	// envDir is the directory an env -C that unwrap looked through runs its
	// command in (envDirSet), for command.
	envDir    string
	envDirSet bool
	// cwdSaved are the directories to go back to when the commands env -C
	// ran elsewhere end.
	cwdSaved []string
	// intVars are the names the script declares integers (declare -i):
	// what is assigned to them is arithmetic.
	intVars map[string]bool
	// lenient counts the unknown programs whose arguments are being judged
	// as command lines (unknownArgs): strict's own rules do not refuse them.
	lenient int
	// inBody: the judging walk is in a function's body, outside any call
	// of it (replay); bodyDepth counts the function calls being judged.
	inBody bool
	// via, while Explain traces, names the table's entry that judges the
	// words being judged (programArgs), for their steps.
	via string
	// viaDepth counts the table's entries whose words are being judged
	// (setVia): the allowlist is not asked about the programs they run.
	viaDepth int
	// slabs hold the argvs of the check's simple commands, and the values
	// expansions build.
	slabs slabs
	// finder is the visitor of fetches.
	finder fetchFinder
	// spareWalks are the emptied maps of walks that ended, for the next walks.
	spareWalks []walkState
	// parser parses the check's scripts, its own from the first script on,
	// and goes back to the pool with the checker: a Get and a Put of the
	// parsers' pool for each script cost more than the rest of release.
	parser *pooledParser
	// fdText are the descriptors exec opened on literal text (exec 3<<<...),
	// and files the files the script wrote, with their text when it is
	// known (follow.go).
	fdText map[string]string
	files  map[string]followedFile
	// events are the judging walks' actions collect recorded (judgeEvent),
	// of the scripts being judged, a nested script's after its parent's.
	events []judgeEvent
}

// checkers are reused from check to check: a checker's maps were a tenth of
// the allocations of a short check, and the garbage they made slowed the rest.
var checkers = sync.Pool{New: func() any {
	return &checker{vars: vars{}, bombs: map[string]bool{}, funcs: map[string]funcDef{},
		aliases: map[string]string{}, inCall: map[string]bool{}, judged: map[string]int{},
		argsCache: map[*syntax.CallExpr][][]word{}}
}}

// maxPooledEntries bounds the maps of a checker that goes back to the pool:
// clearing maps grown by a large script would cost every later check.
const maxPooledEntries = 256

func (p *Policy) newChecker() *checker {
	c := checkers.Get().(*checker)
	c.p = p
	return c
}

// finish ends a check: it returns c to the pool, or, if the check panicked,
// turns the panic into a refusal (internal-error), so that a bug in the checker
// refuses the command instead of allowing it or ending the process (over MCP
// stdio a panic ends the server). steps, for Explain, gets the steps judged
// before the failure and the refusal. A checker that failed is not pooled: its
// state is whatever the panic left.
func (c *checker) finish(d *Decision, steps *[]Step) {
	if recover() == nil {
		c.release()
		return
	}
	*d = Decision{Rule: RuleInternalError.ID, Reason: RuleInternalError.Reason, Mode: c.p.mode}
	if steps != nil {
		c.settle()
		*steps = append(c.trace, Step{Rule: RuleInternalError.ID, Reason: RuleInternalError.Reason})
	}
}

// release empties c and returns it to the pool. Nothing of it may be used
// after: the decision is a copy, and a trace is handed over, not kept.
func (c *checker) release() {
	n := len(c.vars) + len(c.bombs) + len(c.funcs) + len(c.aliases) + len(c.inCall) + len(c.judged) + len(c.argsCache)
	if n > maxPooledEntries {
		return
	}
	// Most maps of most checks stay empty, and clearing an empty map still
	// costs a call.
	clearMap(c.vars)
	clearMap(c.bombs)
	clearMap(c.funcs)
	clearMap(c.aliases)
	clearMap(c.inCall)
	clearMap(c.judged)
	clearMap(c.argsCache)
	clear(c.fetchedVars)
	if !c.slabs.reset() || cap(c.events) > maxSlab {
		return
	}
	c.forget()
	checkers.Put(c)
}

// forget zeroes what a check set in c, but for the maps, slabs and lists
// release empties and keeps. It is the same as building a checker of what
// is kept and copying it over c, field by field: the copy of a whole checker
// cost more than the rest of release (fastpath_test.go holds it to the copy).
func (c *checker) forget() {
	c.p, c.funcNames, c.cachedCalls = nil, 0, 0
	c.first, c.firstGen, c.firstJudged, c.generation = "", 0, false, 0
	c.refusal, c.steps, c.cwd, c.trace, c.via, c.viaDepth = nil, 0, "", nil, "", 0
	c.shellLevel, c.callSrc, c.callExpr, c.outSubsts, c.lenient, c.inBody, c.intVars, c.outFed = 0, "", nil, false, 0, false, nil, nil
	c.envDir, c.envDirSet, c.cwdSaved = "", false, c.cwdSaved[:0]
	c.fdText, c.files = nil, nil
	c.finder = fetchFinder{}
	c.fetchedVars, c.events = c.fetchedVars[:0], c.events[:0]
}

// clearMap empties m unless it is empty already.
func clearMap[M ~map[K]V, K comparable, V any](m M) {
	if len(m) > 0 {
		clear(m)
	}
}

func (c *checker) decision() Decision {
	c.settle()
	if c.refusal != nil {
		return *c.refusal
	}
	return Decision{Allowed: true, Mode: c.p.mode}
}

// refuse records the first refusal; later ones are ignored. Past the step
// budget, the first refusal is the budget's (step).
func (c *checker) refuse(r Rule, match string) {
	if c.refusal != nil {
		return
	}
	if c.lenient > 0 && strictOnly(r) {
		return // an unknown program's argument, read as a command line: only the rules of both modes
	}
	if c.steps > maxSteps {
		r, match = RuleTooComplex, ""
	}
	c.refusal = &Decision{Rule: r.ID, Reason: r.Reason, Match: match, Mode: c.p.mode}
	if c.trace != nil {
		if n := len(c.trace); n > 0 && c.trace[n-1].Rule == "" && (c.trace[n-1].Command == match || match == "") {
			c.trace[n-1].Rule, c.trace[n-1].Reason = r.ID, r.Reason
		} else {
			c.trace = append(c.trace, Step{Command: match, Rule: r.ID, Reason: r.Reason})
		}
	}
}

// done reports whether the check has its decision: a refusal, or the step
// budget spent (step).
func (c *checker) done() bool { return c.refusal != nil || c.steps > maxSteps }

// step counts work; past the budget the command is too complex to judge.
// The refusal is the first a check records once it is past: refuse records
// it in place of its own, and decision (settle) if nothing was refused. Until
// then done reports the check done, so that nothing is judged past the
// budget, as if the refusal had been recorded at the step that spent it; the
// step itself is a bare count, cheap enough to be inlined into the walks'
// small functions, which run at every node.
func (c *checker) step() { c.steps++ }

// settle records the refusal of a spent step budget, if no refusal is
// recorded yet.
func (c *checker) settle() {
	if c.refusal == nil && c.steps > maxSteps {
		c.refuse(RuleTooComplex, "")
	}
}

func (c *checker) strict() bool { return c.p.mode == ModeStrict }

// script parses and judges a whole script (the command, or a nested sh -c string).
func (c *checker) script(src string, depth int) {
	if c.p.onScript != nil {
		c.p.onScript(src)
	}
	if depth > maxDepth {
		c.refuse(RuleTooComplex, "")
		return
	}
	// The same nested script (trap 'kill $PID' EXIT, three times) is judged once,
	// unless a function call has rebound the words it reads since.
	if c.judgedBefore(src) {
		return
	}
	f, err := c.parse(src)
	if err != nil && err != errTooComplex && !utf8.ValidString(src) {
		// Bytes that are not UTF-8 are bytes of a word to sh: each run of
		// them is read as one character that is nothing special. (The
		// parser refuses them, so only a script that fails is looked at.)
		src = strings.ToValidUTF8(src, "\uFFFD")
		f, err = c.parse(src)
	}
	if err != nil {
		if err == errTooComplex {
			c.refuse(RuleTooComplex, "")
			return
		}
		// sh runs each command before the syntax error it has not read
		// yet: those are judged (rm -rf / and then a line "fi"). What
		// cannot be read at all is refused in strict mode, and in standard
		// mode the operator's own patterns still apply to the text.
		if prefix := c.parsePrefix(src); prefix != nil {
			c.judgeParsed(src, prefix, depth)
			if c.done() {
				return
			}
		}
		if c.strict() {
			c.refuse(RuleUnparseable, src)
			return
		}
		c.denyPatterns(src)
		return
	}
	c.judgeParsed(src, f, depth)
}

// judgeParsed judges the parsed script f of the source src.
func (c *checker) judgeParsed(src string, f *syntax.File, depth int) {
	if !mayBind(src) {
		c.walk(src, f, depth)
		return
	}
	before := c.stateSize()
	start := len(c.events)
	c.collect(src, f)
	c.markSureFunctions(f)
	if c.stateChanged(before) {
		c.generation++ // new bindings: scripts judged before may read differently now
	}
	// The judging walk, from what collect's walk recorded (replay): walking
	// the tree again cost as much as the judging of small scripts.
	c.replay(src, start, depth)
	clear(c.events[start:]) // let go of the tree
	c.events = c.events[:start]
}

// markSureFunctions marks the functions f defines at its top level as
// surely defined (funcDef.sure): those are made whenever the script runs.
func (c *checker) markSureFunctions(f *syntax.File) {
	if len(c.funcs) == 0 {
		return
	}
	for _, st := range f.Stmts {
		fd, ok := st.Cmd.(*syntax.FuncDecl)
		if !ok || fd.Name == nil || st.Background || st.Negated {
			continue
		}
		if def, ok := c.funcs[fd.Name.Value]; ok && def.body == fd.Body {
			def.sure = true
			c.funcs[fd.Name.Value] = def
		}
	}
}

// judgedBefore reports whether src was judged already at the current
// binding generation, and records that it is judged now. The first script of
// a check, nearly always its only one, is kept out of the judged map: hashing
// a whole script for the map cost more than the lookup it was for.
func (c *checker) judgedBefore(src string) bool {
	if !c.firstJudged {
		c.first, c.firstGen, c.firstJudged = src, c.generation, true
		return false
	}
	if src == c.first {
		if c.firstGen == c.generation {
			return true
		}
		c.firstGen = c.generation
		return false
	}
	if gen, ok := c.judged[src]; ok && gen == c.generation {
		return true
	}
	if c.judged == nil {
		c.judged = map[string]int{}
	}
	c.judged[src] = c.generation
	return false
}

// writeTargets are files whose writing does what a refused command does.
var writeTargets = map[string]Rule{
	"/proc/sysrq-trigger":     RulePower, // "b" reboots, "o" powers off, at once
	"/sys/fs/selinux/enforce": RuleSELinux,
	"/selinux/enforce":        RuleSELinux,
}

// writeTo judges a write to target, by a redirect or by a program that writes
// it: a block device, or a file whose writing does what a refused command does.
func (c *checker) writeTo(target, match string) {
	if rule, ok := c.writeRule(target); ok {
		c.refuse(rule, match)
	}
}

// writeRule is the rule that refuses a write to target, if one does.
func (c *checker) writeRule(target string) (Rule, bool) {
	if alwaysPass[target] {
		return Rule{}, false
	}
	t := homeToTilde(strings.ReplaceAll(target, `"`, ""))
	if t != "" && t[0] != '/' && t[0] != '~' && (c.cwd != "" || len(c.p.denyWrite) > 0) {
		// A relative target, from the directory the script moved to, or
		// else from the sandbox's working directory.
		t = c.dir() + "/" + t
	}
	p := systemPath(t)
	if rule, ok := writeTargets[p]; ok {
		return rule, true
	}
	if isSystemBlockDevice(systemPathAgain(p)) { // isBlockDevice(p), without cleaning p twice
		return RuleBlockDevice, true
	}
	for _, re := range c.p.denyWrite {
		if re.MatchString(p) {
			return RuleDenyWrite, true
		}
	}
	if len(c.p.denyWrite) > 0 && strings.ContainsAny(p, "*?[") {
		// A glob target (> /et?/hosts) writes whatever it matches.
		for _, g := range c.p.denyGlobs {
			if globsMeet(p, g) {
				return RuleDenyWrite, true
			}
		}
	}
	return Rule{}, false
}

// dir is the directory relative paths are read from: where the script
// moved to (cd), else the sandbox's working directory.
func (c *checker) dir() string {
	if c.cwd != "" {
		return c.cwd
	}
	return c.p.workdir()
}

// isCodeVar reports whether a variable's value runs as code: a name of
// codeVarTable (programs.go), or an exported bash function (BASH_FUNC_name%%).
func isCodeVar(name string) bool {
	if codeVars[name] || strings.HasPrefix(name, "BASH_FUNC_") {
		return true
	}
	for _, p := range codeVarPatterns {
		if pre, suf, _ := strings.Cut(p, "*"); len(name) > len(p) && strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// codeVar judges the value of a code variable as the script it is.
func (c *checker) codeVar(name, value string, depth int) {
	switch {
	case strings.HasPrefix(name, "BASH_FUNC_"):
		value = strings.TrimPrefix(strings.TrimSpace(value), "()") // () { body }
	case name == "LESSOPEN" || name == "LESSCLOSE":
		// less runs "|cmd %s" (or "||cmd", "|-cmd") with the file's name for %s.
		value = strings.TrimLeft(strings.TrimSpace(value), "|-")
		value = strings.ReplaceAll(value, "%s", "file")
	}
	c.childScript(value, depth+1)
}

// stateSize measures what collect may add (variables, functions, aliases); it
// only grows, so a change in size means a change.
func (c *checker) stateSize() int {
	n := len(c.funcs) + len(c.aliases) + len(c.bombs) + len(c.fetchedVars)
	for _, info := range c.vars {
		n += 1 + len(info.values) + len(info.array)
		if info.unknown {
			n++
		}
	}
	return n
}

// stateChanged is c.stateSize() != before, without adding up the variables'
// values when the state was empty before (the first script of most checks):
// every variable adds at least one to the size, so an empty state has changed
// if anything is bound.
func (c *checker) stateChanged(before int) bool {
	if before == 0 {
		return len(c.funcs)+len(c.aliases)+len(c.bombs)+len(c.fetchedVars)+len(c.vars) > 0
	}
	return c.stateSize() != before
}

// mayBind reports whether a script may bind anything collect records (a
// variable, a function, an alias, the positional parameters): most one-line
// commands bind nothing, and need not be walked twice.
func mayBind(src string) bool {
	if strings.IndexByte(src, '=') >= 0 || strings.IndexByte(src, '(') >= 0 {
		return true
	}
	// One pass for the words, which looks only at the words a byte can start
	// and whose second byte follows: a scan per word cost more than the rest
	// of a short command's check. Every binding word has three bytes or more.
	for i := 0; i+1 < len(src); i++ {
		seconds := bindingSeconds[src[i]]
		if seconds == nil || !seconds[src[i+1]] {
			continue // most bytes and pairs: a table's entry, cheaper than the list of words they start
		}
		for _, w := range bindingWordsBy[src[i]] {
			if strings.HasPrefix(src[i:], w) {
				return true
			}
		}
	}
	return false
}

// bindingWords are the commands and keywords that bind without = or (.
var bindingWords = []string{"for", "select", "function", "set", "alias", "printf", "read", "mapfile", "getopts"}

// bindingSeconds are, by the first byte of a binding word, the second bytes
// of the binding words it starts (nil for a byte that starts none).
var bindingSeconds = func() (seconds [256]*byteSet) {
	for _, w := range bindingWords {
		if seconds[w[0]] == nil {
			seconds[w[0]] = new(byteSet)
		}
		seconds[w[0]][w[1]] = true
	}
	return seconds
}()

// bindingWordsBy are the binding words by their first byte.
var bindingWordsBy = func() (by [256][]string) {
	for _, w := range bindingWords {
		by[w[0]] = append(by[w[0]], w)
	}
	return by
}()

// collect records the script's literal assignments and its self-spawning functions
// before anything is judged, so that a use before the assignment is followed too.
// Like the judging walk, it counts a step at every node and at the end of its
// children, and looks into a word only if the word may hold commands.
func (c *checker) collect(src string, f *syntax.File) {
	w := treeWalk{c: c, src: src, collect: true}
	w.file(f)
	w.endEvents()
}

// collectNode is collect's entry of a node it may act on; it reports whether
// to look inside it.
func (c *checker) collectNode(src string, n syntax.Node) bool {
	c.step()
	switch n := n.(type) {
	case *syntax.Word:
		return mayHoldCommands(n)
	case *syntax.Assign:
		if n.Name == nil {
			return true
		}
		if n.Array != nil && !n.Append && n.Index == nil {
			c.collectArray(src, n)
			return true
		}
		if n.Append && n.Array == nil && n.Index == nil {
			c.appendVar(src, n)
			return true
		}
		if n.Append || n.Array != nil || n.Index != nil {
			c.vars.setUnknown(n.Name.Value)
			return true
		}
		alts := c.expandWordNoSplit(src, n.Value)
		if alts == nil {
			c.vars.setUnknown(n.Name.Value)
			if n.Value != nil && c.fetchedText(sourceOf(src, n.Value)) {
				c.fetchedVars = append(c.fetchedVars, n.Name.Value)
			}
		}
		for _, v := range alts {
			c.vars.add(n.Name.Value, v)
		}
	case *syntax.ForClause:
		if it, ok := n.Loop.(*syntax.WordIter); ok {
			for _, item := range it.Items {
				for _, alt := range c.expandWord(src, item) {
					for _, w := range alt {
						if w.dynamic {
							c.vars.setUnknown(it.Name.Value)
						} else {
							c.vars.add(it.Name.Value, w.s)
						}
					}
				}
			}
			if len(it.Items) == 0 {
				c.vars.setUnknown(it.Name.Value)
			}
		}
	case *syntax.ParamExp:
		// ${x:=rm} assigns when x is unset.
		if n.Param != nil && n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
			if v, ok := c.staticString(n.Exp.Word); ok {
				c.vars.add(n.Param.Value, v)
			} else {
				c.vars.setUnknown(n.Param.Value)
			}
		}
	case *syntax.FuncDecl:
		// Whether it is a fork bomb is told by the walk of its body (treeWalk.body).
		if n.Name != nil {
			c.funcs[n.Name.Value] = funcDef{src: src, body: n.Body, level: c.shellLevel, pos: n.Pos().Offset()}
			c.funcNames.add(n.Name.Value)
		}
	}
	return !c.done()
}

// collectCall is collect's entry of a simple command, as collectNode is of
// the other nodes collect acts on: the walk, which knows the node's type,
// calls it directly, since a simple command is the node collect enters most
// and collectNode's switch on the type was a large part of its cost.
func (c *checker) collectCall(src string, n *syntax.CallExpr) bool {
	c.step()
	// read, mapfile, getopts and friends assign at run time.
	first := ""
	if len(n.Args) > 0 {
		first = wordLit(n.Args[0])
	}
	if len(n.Args) > 1 && first == "set" && wordLit(n.Args[1]) == "--" {
		// set -- a b c: the positional parameters, when all are static.
		var elems []string
		for _, alt := range c.expandArgs(src, n.Args[2:])[:1] {
			for _, w := range alt {
				if w.dynamic {
					c.vars.setUnknown("@")
					return true
				}
				elems = append(elems, w.s)
			}
		}
		c.vars.setArray("@", elems)
	}
	if len(n.Args) > 1 && first == "alias" {
		for _, a := range n.Args[1:] {
			if v, ok := c.staticString(a); ok {
				if name, body, ok := strings.Cut(v, "="); ok {
					c.aliases[name] = body
				}
			}
		}
	}
	if len(n.Args) >= 4 && first == "printf" && wordLit(n.Args[1]) == "-v" {
		// printf -v x FORMAT ARGS...: what printf would print is the value,
		// when it is modelled (printfText); else the value is unknown, never
		// the format itself (printf -v c '\x72m' is rm).
		name := n.Args[2].Lit()
		args := make([]string, 0, len(n.Args)-3)
		known := true
		for _, a := range n.Args[3:] {
			v, ok := c.staticString(a)
			if !ok {
				known = false
				break
			}
			args = append(args, v)
		}
		if text, ok := printfText(args); known && ok {
			c.vars.add(name, text)
		} else {
			c.vars.setUnknown(name)
		}
		return true
	}
	if len(n.Args) > 0 {
		switch first {
		case "read", "mapfile", "readarray", "getopts":
			for _, a := range n.Args[1:] {
				if name := a.Lit(); envName(name) {
					c.vars.setUnknown(name)
				}
			}
		}
	}
	return !c.done()
}

// appendVar follows x+=value: every value x may have, extended.
func (c *checker) appendVar(src string, a *syntax.Assign) {
	tails := c.expandWordNoSplit(src, a.Value)
	info := c.vars.info(a.Name.Value)
	if tails == nil || info.unknown || info.array != nil {
		c.vars.setUnknown(a.Name.Value)
		return
	}
	c.generation++ // values are replaced, not only added: stateSize cannot see it
	heads := info.values
	if len(heads) == 0 {
		heads = []string{""}
	}
	info.values = nil
	for _, h := range heads {
		for _, t := range tails {
			c.vars.add(a.Name.Value, h+t)
		}
	}
}

// collectArray records a=(x y z) when every element is static.
func (c *checker) collectArray(src string, a *syntax.Assign) {
	var elems []string
	for _, el := range a.Array.Elems {
		if el.Index != nil || el.Value == nil {
			c.vars.setUnknown(a.Name.Value)
			return
		}
		alts := c.expandWord(src, el.Value)
		if len(alts) != 1 {
			c.vars.setUnknown(a.Name.Value)
			return
		}
		for _, w := range alts[0] {
			if w.dynamic {
				c.vars.setUnknown(a.Name.Value)
				return
			}
			elems = append(elems, w.s)
		}
	}
	c.vars.setArray(a.Name.Value, elems)
}

// expandWordNoSplit returns the values an assignment's right side may take, or
// nil when one is only known at run time.
func (c *checker) expandWordNoSplit(src string, w *syntax.Word) []string {
	if w == nil {
		return []string{""}
	}
	if len(w.Parts) == 1 {
		return c.partValuesNoSplit(src, w.Parts[0])
	}
	alts := [][]segment{nil}
	for _, part := range w.Parts {
		if sg, ok := staticPart(part, true); ok { // as partSegments would, without its slices
			for i := range alts {
				alts[i] = append(alts[i], sg)
			}
			continue
		}
		choices := c.partSegments(src, part, true)
		if len(alts)*len(choices) > maxCandidates {
			return nil
		}
		alts = product(alts, choices, &c.slabs.segs, &c.slabs.segLists)
	}
	return joinAlternatives(alts)
}

// joinAlternatives joins each alternative's segments into one value, or
// returns nil when any segment is only known at run time.
func joinAlternatives(alts [][]segment) []string {
	out := make([]string, 0, len(alts))
	for _, a := range alts {
		if len(a) == 1 && !a[0].dynamic {
			out = append(out, a[0].s)
			continue
		}
		var b strings.Builder
		for _, sg := range a {
			if sg.dynamic {
				return nil
			}
			b.WriteString(sg.s)
		}
		out = append(out, b.String())
	}
	return out
}

// partValuesNoSplit is expandWordNoSplit of a word of one part (most
// assignments: x=$(cmd), x="...", x=${y:-z}), without building the list of
// alternatives a product of parts needs: the same values, from the same calls.
func (c *checker) partValuesNoSplit(src string, part syntax.WordPart) []string {
	if sg, ok := staticPart(part, true); ok {
		return []string{sg.s}
	}
	switch p := part.(type) {
	case *syntax.CmdSubst:
		if text, ok := c.cmdSubstText(src, p); ok {
			return []string{text}
		}
		return nil
	case *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
		return nil // partSegments: only known when the command runs
	}
	choices := c.partSegments(src, part, true)
	if len(choices) > maxCandidates {
		return nil
	}
	return joinAlternatives(choices)
}

// function returns the function the script defines by name, if it does.
// Every command is looked up, and nearly none is a function: the filter of
// the functions' names answers for most without the map.
func (c *checker) function(name string) (funcDef, bool) {
	if !c.funcNames.mayHold(name) {
		return funcDef{}, false
	}
	f, ok := c.funcs[name]
	return f, ok
}

// nameFilter is a set of names that may answer yes for a name it was not
// given, but never no for one it was: a bit per name, chosen by its length
// and its first and last bytes.
type nameFilter uint64

func (f *nameFilter) add(name string) { *f |= nameBit(name) }

func (f nameFilter) mayHold(name string) bool { return f&nameBit(name) != 0 }

func nameBit(name string) nameFilter {
	if name == "" {
		return 1
	}
	return 1 << ((uint(len(name)) + 3*uint(name[0]) + 7*uint(name[len(name)-1])) % 64)
}

// funcDef is a function the script defines.
type funcDef struct {
	src  string
	body *syntax.Stmt
	// sure: the definition is a statement of its script's top level, made
	// whenever the script runs (not in a subshell, a branch, a loop, a
	// body or the background); script marks it after collect.
	sure  bool
	level int  // the checker's shellLevel where it was defined
	pos   uint // where the definition starts in src
}

// bindArgs makes a call's static arguments the positional parameters ($0 is
// name), as candidates added to what the script already binds.
func (c *checker) bindArgs(name string, args []word) {
	clear(c.argsCache) // the words of the body now read differently
	c.cachedCalls = 0
	c.generation++
	c.vars.add("0", name)
	var elems []string
	for i, a := range args {
		if a.dynamic {
			c.vars.setUnknown("@")
			return
		}
		if i < 9 {
			c.vars.add(string(rune('1'+i)), a.s)
		}
		elems = append(elems, a.s)
	}
	info := c.vars.info("@")
	if info.array == nil && !info.unknown {
		info.array = elems
	}
}

// cmdContext is what a simple command's surroundings tell about it.
type cmdContext struct {
	stdin     []string // literal text piped into it by echo/printf, split into words
	stdinKnow bool     // stdin is that literal text
	stdinText *string  // and the text itself, its lines kept
	fromFetch bool     // a pipeline stage before it downloads (curl, wget)
	piped     bool     // it is a later stage of a pipeline
	pipeline  string   // the pipeline's source text, to show in a refusal
	hereDoc   *string  // a static here-document or here-string fed to it
	redirIn   bool     // stdin comes from a here-document or here-string
}

// walkState is what one walk learns about simple commands before it reaches
// them. Its maps are made on first use: most scripts have neither a pipeline
// nor a here-document.
type walkState struct {
	ctxs  map[*syntax.CallExpr]cmdContext
	inner map[*syntax.BinaryCmd]bool // pipes already seen as part of a longer pipeline
}

// ctx is ws.ctxs[call], without the map's call for the walks whose map is
// empty, most of them.
func (ws *walkState) ctx(call *syntax.CallExpr) cmdContext {
	if len(ws.ctxs) == 0 {
		return cmdContext{}
	}
	return ws.ctxs[call]
}

func (ws *walkState) setCtx(call *syntax.CallExpr, ctx cmdContext) {
	if ws.ctxs == nil {
		ws.ctxs = map[*syntax.CallExpr]cmdContext{}
	}
	ws.ctxs[call] = ctx
}

func (ws *walkState) setInner(b *syntax.BinaryCmd) {
	if ws.inner == nil {
		ws.inner = map[*syntax.BinaryCmd]bool{}
	}
	ws.inner[b] = true
}

// walk judges every statement of a parsed script (or of a function's body),
// in source order.
func (c *checker) walk(src string, f syntax.Node, depth int) {
	w := treeWalk{c: c, src: src, depth: depth, ws: c.takeWalkState()}
	switch f := f.(type) {
	case *syntax.File:
		w.file(f)
	case *syntax.Stmt:
		w.stmt(f)
	default:
		panic(fmt.Sprintf("walk: unexpected root %T", f))
	}
	c.putWalkState(w.ws)
}

// takeWalkState returns the maps of a walk that ended, emptied, if there is
// one: a walk with a pipeline or a here-document made its maps anew, and they
// were a large part of the bytes a check allocated.
func (c *checker) takeWalkState() walkState {
	n := len(c.spareWalks)
	if n == 0 {
		return walkState{}
	}
	ws := c.spareWalks[n-1]
	c.spareWalks[n-1] = walkState{}
	c.spareWalks = c.spareWalks[:n-1]
	return ws
}

// putWalkState keeps the maps of a walk that ended for the next walk, unless
// there are none, or they grew too large to clear cheaply.
func (c *checker) putWalkState(ws walkState) {
	if ws.ctxs == nil && ws.inner == nil || len(ws.ctxs) > maxPooledEntries || len(ws.inner) > maxPooledEntries {
		return
	}
	clear(ws.ctxs)
	clear(ws.inner)
	c.spareWalks = append(c.spareWalks, ws)
}

// judgeBinary, judgeStmt, judgeCall, judgeDecl and judgeLet are the judging
// walk's actions at the nodes it acts on, after the step of their entry.

func (c *checker) judgeBinary(src string, n *syntax.BinaryCmd, ws *walkState) {
	if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && !ws.inner[n] {
		c.pipeline(src, n, ws)
	}
}

// judgeDecl judges export, declare, local, readonly and typeset.
func (c *checker) judgeDecl(n *syntax.DeclClause, depth int) {
	integer := false
	for _, as := range n.Args {
		if as.Name == nil && as.Value != nil {
			// An option: -i makes the names integers, whose assignments are
			// arithmetic, where a subscript runs its substitutions.
			if f := wordLit(as.Value); len(f) > 1 && f[0] == '-' && strings.IndexByte(f, 'i') > 0 {
				integer = true
			}
			continue
		}
		if as.Name != nil && integer {
			if c.intVars == nil {
				c.intVars = map[string]bool{}
			}
			c.intVars[as.Name.Value] = true
		}
		if as.Name != nil && as.Value != nil {
			if v, ok := c.staticString(as.Value); ok {
				if isCodeVar(as.Name.Value) {
					c.codeVar(as.Name.Value, v, depth)
				} else if integer || c.intVars[as.Name.Value] {
					c.let(v, depth)
				}
			}
		}
	}
}

// judgeArithm judges an arithmetic command's variables: the shell
// evaluates a variable's value as arithmetic again, where an array
// subscript runs its substitutions (x='a[$(cmd)]'; (( x )) or (( a[$x] ))).
func (c *checker) judgeArithm(n *syntax.ArithmCmd, depth int) {
	if len(c.vars) == 0 {
		return // nothing bound: nothing to evaluate again
	}
	v := &arithmNames{}
	walk(n.X, v)
	for _, name := range v.names {
		vals, _ := c.vars.lookup(name)
		for _, val := range vals {
			if strings.Contains(val, "$(") || strings.IndexByte(val, '`') >= 0 {
				c.let(val, depth)
			}
		}
	}
}

// arithmNames finds the names of variables an arithmetic expression reads.
type arithmNames struct{ names []string }

func (v *arithmNames) enter(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Lit:
		if envName(n.Value) {
			v.names = append(v.names, n.Value)
		}
	case *syntax.ParamExp:
		if n.Param != nil {
			v.names = append(v.names, n.Param.Value)
		}
	}
	return true
}

func (v *arithmNames) leave() {}

func (c *checker) judgeLet(src string, n *syntax.LetClause, depth int) {
	for _, e := range n.Exprs {
		c.let(strings.Trim(src[e.Pos().Offset():e.End().Offset()], `'"`), depth)
	}
}

// pipeline records, for each stage, what flows into it.
func (c *checker) pipeline(src string, b *syntax.BinaryCmd, ws *walkState) {
	var stageBuf [8]*syntax.Stmt // most pipelines are short: no allocation for them
	stages := appendStages(stageBuf[:0], b.X, ws)
	stages = appendStages(stages, b.Y, ws)
	fetched := false
	text, known := "", false // what the stage before writes, when it is literal
	for i, st := range stages {
		if i > 0 {
			var stdin []string
			stdinKnow := known
			if known {
				stdin = ifsFields(text)
			} else if prev, ok := stages[i-1].Cmd.(*syntax.CallExpr); ok {
				stdin = findStarts(c, src, prev) // find / | xargs rm -rf
			}
			// The stage's commands read the pipe: the stage itself, or the commands
			// of a group or subshell it is ({ sh; }, (bash)).
			var readerBuf [4]*syntax.CallExpr
			for _, call := range readers(readerBuf[:0], st) {
				ctx := ws.ctxs[call]
				ctx.piped, ctx.fromFetch, ctx.pipeline = true, fetched, sourceOf(src, b)
				ctx.stdin, ctx.stdinKnow = stdin, stdinKnow
				if stdinKnow {
					t := text
					ctx.stdinText = &t
				}
				ws.setCtx(call, ctx)
			}
		}
		// echo TEXT, and a filter (base64 -d, rev, tr) of known text: the
		// next stage reads known text.
		if i+1 < len(stages) {
			text, known = c.literalText(src, st, text, known)
		}
		fetched = fetched || c.fetches(src, st)
	}
}

// appendStages appends the stages of a pipeline statement, flattening the
// nested pipes of a longer pipeline (a | b | c), which it marks as seen.
func appendStages(stages []*syntax.Stmt, s *syntax.Stmt, ws *walkState) []*syntax.Stmt {
	if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) {
		ws.setInner(bc)
		stages = appendStages(stages, bc.X, ws)
		return appendStages(stages, bc.Y, ws)
	}
	return append(stages, s)
}

// readers appends to out the simple commands of a pipeline stage that read
// its stdin: the stage's own command, or those of a group or subshell, not
// looking into substitutions or nested pipelines.
func readers(out []*syntax.CallExpr, st *syntax.Stmt) []*syntax.CallExpr {
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		out = append(out, cmd)
		// tee >(sh): the commands of an output process substitution read
		// what the stage writes to it, which is the pipe's text.
		for _, w := range cmd.Args {
			for _, part := range w.Parts {
				if ps, ok := part.(*syntax.ProcSubst); ok && ps.Op == syntax.CmdOut {
					out = readersOf(out, ps.Stmts)
				}
			}
		}
		return out
	case *syntax.Block:
		return readersOf(out, cmd.Stmts)
	case *syntax.Subshell:
		return readersOf(out, cmd.Stmts)
	case *syntax.BinaryCmd:
		if cmd.Op == syntax.AndStmt || cmd.Op == syntax.OrStmt {
			// (cd x && sh): the list's commands share the stage's stdin.
			return readers(readers(out, cmd.X), cmd.Y)
		}
	}
	return out
}

func readersOf(out []*syntax.CallExpr, stmts []*syntax.Stmt) []*syntax.CallExpr {
	for _, s := range stmts {
		out = readers(out, s)
	}
	return out
}

// findStarts returns the start paths of a find stage: find prints them first,
// then what lies under them, so they are among what a following xargs receives.
// Other output stays unknown.
func findStarts(c *checker, src string, call *syntax.CallExpr) []string {
	alts := c.callArgs(src, call, true)
	if len(call.Args) == 0 || len(alts) != 1 || len(alts[0]) == 0 || commandName(alts[0][0].s) != "find" {
		return nil
	}
	var starts []string
	for _, w := range alts[0][1:] {
		if w.dynamic || strings.HasPrefix(w.s, "-") || w.s == "(" || w.s == "!" {
			break
		}
		starts = append(starts, w.s)
	}
	return starts
}

// literalOutput returns what echo or printf with static arguments writes, split
// into words, so that `echo / | xargs rm -rf` is judged as `rm -rf /`.
func (c *checker) literalOutput(src string, call *syntax.CallExpr) ([]string, bool) {
	if len(call.Args) == 0 {
		return nil, false
	}
	alts := c.callArgs(src, call, true)
	if len(alts) != 1 || len(alts[0]) == 0 {
		return nil, false
	}
	argv := alts[0]
	name := commandName(argv[0].s)
	if name != "echo" && name != "printf" {
		return nil, false
	}
	var args []string
	for _, w := range argv[1:] {
		if w.dynamic {
			return nil, false
		}
		args = append(args, w.s)
	}
	text, ok := "", true
	if name == "printf" {
		text, ok = printfText(args)
	} else {
		text = echoText(args)
	}
	if !ok {
		return nil, false
	}
	return ifsFields(text), true
}

// echoText is what echo prints: its words joined by spaces, with -e's escapes
// decoded (bash's builtin echo, and busybox's, take -n, -e and -E).
func echoText(args []string) string {
	escapes := false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		escapes = strings.ContainsRune(args[0], 'e') || escapes && !strings.ContainsRune(args[0], 'E')
		args = args[1:]
	}
	text := strings.Join(args, " ")
	if escapes {
		text = unescape(text)
	}
	return text
}

// printfText is what printf prints for a literal format and arguments: %s, %b,
// %c, %d and %% are applied and the escapes decoded, so that a command name
// spelt as printf '\x72\x6d' or printf 'r%s' m reads as rm. ok is false for
// what it does not model: the output is then unknown (dynamic).
func printfText(args []string) (string, bool) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "-v" {
		return "", false
	}
	format, args := args[0], args[1:]
	var b strings.Builder
	for first := true; first || len(args) > 0; first = false {
		for i := 0; i < len(format); i++ {
			ch := format[i]
			switch {
			case ch == '\\':
				text, n := unescapeOne(format[i:])
				b.WriteString(text)
				i += n - 1
			case ch == '%' && i+1 < len(format):
				i++
				arg := ""
				if format[i] != '%' && len(args) > 0 {
					arg, args = args[0], args[1:]
				}
				switch format[i] {
				case '%':
					b.WriteByte('%')
				case 's', 'd', 'i', 'u':
					b.WriteString(arg)
				case 'c':
					if arg != "" {
						b.WriteByte(arg[0])
					}
				case 'b':
					text := unescape(arg)
					b.WriteString(text)
				default:
					return "", false // widths, precisions, other conversions
				}
			default:
				b.WriteByte(ch)
			}
		}
		if !strings.Contains(format, "%") {
			break
		}
	}
	return b.String(), true
}

// unescape decodes the backslash escapes of echo -e and printf.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		text, n := unescapeOne(s[i:])
		b.WriteString(text)
		i += n - 1
	}
	return b.String()
}

// unescapeOne decodes the escape at the start of s and says how long it was.
func unescapeOne(s string) (string, int) {
	if len(s) < 2 {
		return s, len(s)
	}
	switch s[1] {
	case 'n':
		return "\n", 2
	case 't':
		return "\t", 2
	case '\\':
		return "\\", 2
	case 'u', 'U':
		// \uHHHH, \UHHHHHHHH: bash's printf writes the character.
		width := 4
		if s[1] == 'U' {
			width = 8
		}
		n := 2
		for n < len(s) && n < 2+width && isHex(s[n]) {
			n++
		}
		if n == 2 {
			return s[:2], 2
		}
		v, _ := strconv.ParseUint(s[2:n], 16, 32)
		return string(rune(v)), n
	case 'x':
		n := 2
		for n < len(s) && n < 4 && isHex(s[n]) {
			n++
		}
		if n == 2 {
			return s[:2], 2
		}
		v, _ := strconv.ParseUint(s[2:n], 16, 8)
		return string(rune(byte(v))), n
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n := 1
		if s[1] == '0' {
			n = 2 // \0NNN
		}
		start := n
		for n < len(s) && n < start+3 && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[start:n], 8, 8)
		if n == start {
			v = 0
		}
		return string(rune(byte(v))), n
	}
	return s[:2], 2
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// ifsFields splits text as the shell splits an unquoted expansion with the
// default IFS: on spaces, tabs and newlines only (a U+00A0 is part of a word).
func ifsFields(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

// fetches reports whether a statement downloads: curl or wget anywhere in it.
func (c *checker) fetches(src string, st *syntax.Stmt) bool {
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && onlyCall(call, st.Redirs) {
		// The walk below would find the call and nothing else that holds a
		// command: judge the call alone, without the walk.
		return c.callFetches(src, call)
	}
	v := &c.finder // the checker's own, rather than one allocated per stage
	if v.c != nil {
		v = &fetchFinder{} // in use: cannot happen (nothing under a fetches looks for another), but cheap to be sure of
	}
	*v = fetchFinder{c: c, src: src}
	walk(st, v)
	found := v.found
	*v = fetchFinder{}
	return found
}

// onlyCall reports whether a statement of call with redirs holds no command
// but call: none of its words may hold one (mayHoldCommands, the test the
// walks look inside a word by), and no assignment has an index or an array.
func onlyCall(call *syntax.CallExpr, redirs []*syntax.Redirect) bool {
	for _, as := range call.Assigns {
		if as.Index != nil || as.Array != nil || as.Value != nil && mayHoldCommands(as.Value) {
			return false
		}
	}
	for _, w := range call.Args {
		if mayHoldCommands(w) {
			return false
		}
	}
	for _, r := range redirs {
		if mayHoldCommands(r.Word) || r.Hdoc != nil && mayHoldCommands(r.Hdoc) {
			return false
		}
	}
	return true
}

// callFetches reports whether a simple command downloads: it runs curl or
// wget, possibly through wrappers, in one of its readings.
func (c *checker) callFetches(src string, call *syntax.CallExpr) bool {
	found := false
	for _, argv := range c.callArgs(src, call, true) {
		if len(argv) == 0 {
			continue
		}
		name := commandName(argv[0].s)
		for range maxDepth {
			e := entryOf(name)
			if !argv[0].dynamic && e.kind&kindWrapper != 0 {
				if argv = c.unwrapQuiet(argv); len(argv) == 0 {
					break
				}
				name = commandName(argv[0].s)
				e = entryOf(name)
			}
			if e.prog == nil || !e.prog.runsSub {
				break
			}
			inner := subArgv(argv) // pyenv exec curl ...: the program it runs
			if inner == nil {
				break
			}
			argv, name = inner, commandName(inner[0].s)
		}
		if len(argv) > 0 && isFetcher(name) {
			found = true
		}
	}
	return found
}

// fetchFinder is the visitor of fetches.
type fetchFinder struct {
	c     *checker
	src   string
	found bool
}

func (v *fetchFinder) enter(n syntax.Node) bool {
	if v.found {
		return false
	}
	switch n := n.(type) {
	case *syntax.Word:
		return mayHoldCommands(n)
	case *syntax.CallExpr:
		v.found = v.c.callFetches(v.src, n)
	}
	return !v.found
}

func (v *fetchFinder) leave() {}

// redirects judges a statement's redirections, and notes here-documents fed to
// the command.
func (c *checker) redirects(src string, st *syntax.Stmt, ws *walkState) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			call, ok := st.Cmd.(*syntax.CallExpr)
			if !ok {
				continue
			}
			ctx := ws.ctxs[call]
			ctx.redirIn = true
			body := r.Hdoc
			if r.Op == syntax.WordHdoc {
				body = r.Word
			}
			if s, ok := c.staticString(body); ok {
				ctx.hereDoc = &s
			} else if body != nil && c.fetchedText(sourceOf(src, body)) {
				ctx.fromFetch = true // bash <<< "$(curl ...)"
			}
			ws.setCtx(call, ctx)
			continue
		case syntax.DplOut, syntax.DplIn:
			if fd := wordLit(r.Word); fd == "-" || isDigits(strings.TrimSuffix(fd, "-")) {
				continue // >&2, <&0, >&-: file descriptors, not paths
			}
		}
		if r.Word == nil {
			continue
		}
		if ps := outSubst(r.Word); ps != nil && r.Op != syntax.RdrIn {
			// echo x > >(sh): the substitution's commands read what the
			// statement writes, as a pipe's next stage does.
			c.feedOutSubst(src, st, ps, ws)
			continue
		}
		target, ok := c.staticString(r.Word)
		if !ok && r.Op != syntax.RdrIn {
			if text := sourceOf(src, r.Word); mentionsHome(text) && homeSpelling.MatchString(text) {
				c.writeTo(text, r.Op.String()+" "+text) // > "$HOME/.bash_history"
				if c.done() {
					return
				}
			}
		}
		if !ok {
			if r.Op == syntax.RdrIn {
				if call, isCall := st.Cmd.(*syntax.CallExpr); isCall {
					// sh < <(curl ...): the shell's stdin is another command's output.
					ctx := ws.ctxs[call]
					ctx.redirIn = true
					ctx.fromFetch = ctx.fromFetch || c.fetchedText(sourceOf(src, r.Word))
					ws.setCtx(call, ctx)
				}
			}
			continue
		}
		// The text a refusal shows ("> /etc/x") is built only for one: most
		// redirects (2>/dev/null, > out.txt) are refused by nothing.
		if r.Op != syntax.RdrIn {
			if rule, ok := c.writeRule(target); ok {
				c.refuse(rule, r.Op.String()+" "+target)
			}
			if c.done() {
				return
			}
		}
		if len(c.p.roots) > 0 {
			c.checkPath(target, r.Op.String()+" "+target)
		}
	}
	if !c.done() {
		c.followRedirects(src, st, ws)
	}
}

// outSubst returns the output process substitution a word is, if it is one.
func outSubst(w *syntax.Word) *syntax.ProcSubst {
	if len(w.Parts) != 1 {
		return nil
	}
	if ps, ok := w.Parts[0].(*syntax.ProcSubst); ok && ps.Op == syntax.CmdOut {
		return ps
	}
	return nil
}

// feedOutSubst records that the commands of ps read what st writes: the
// literal output of an echo or printf, else text strict does not judge.
func (c *checker) feedOutSubst(src string, st *syntax.Stmt, ps *syntax.ProcSubst, ws *walkState) {
	var stdin []string
	known := false
	if call, ok := st.Cmd.(*syntax.CallExpr); ok {
		stdin, known = c.literalOutput(src, call)
	}
	var readerBuf [4]*syntax.CallExpr
	for _, call := range readersOf(readerBuf[:0], ps.Stmts) {
		ctx := ws.ctxs[call]
		ctx.piped, ctx.pipeline, ctx.stdin, ctx.stdinKnow = true, sourceOf(src, st), stdin, known
		ws.setCtx(call, ctx)
	}
}

// call judges one simple command, in every reading its expansions allow.
func (c *checker) call(src string, call *syntax.CallExpr, ctx cmdContext, depth int) {
	for _, as := range call.Assigns {
		if as.Name != nil && as.Value != nil && isCodeVar(as.Name.Value) {
			if v, ok := c.staticString(as.Value); ok {
				c.codeVar(as.Name.Value, v, depth)
			} else if c.strict() {
				c.refuse(RuleDynamicCommand, sourceOf(src, as))
			}
		}
		if len(c.intVars) > 0 && as.Name != nil && as.Value != nil && c.intVars[as.Name.Value] {
			if v, ok := c.staticString(as.Value); ok {
				c.let(v, depth) // declare -i x; x='a[$(cmd)]': arithmetic
			}
		}
	}
	if len(call.Args) == 0 || c.done() {
		return // assignments only
	}
	c.callSrc, c.callExpr = src, call
	for _, w := range call.Args[1:] {
		if !c.outSubsts {
			break // no >(...) in the check's scripts: most
		}
		if len(w.Parts) == 1 {
			if ps, ok := w.Parts[0].(*syntax.ProcSubst); ok && ps.Op == syntax.CmdOut {
				// tee >(sh): the substitution's commands read what the
				// command writes into it.
				if c.outFed == nil {
					c.outFed = map[*syntax.CallExpr]string{}
				}
				var readerBuf [4]*syntax.CallExpr
				for _, r := range readersOf(readerBuf[:0], ps.Stmts) {
					c.outFed[r] = sourceOf(src, call)
				}
			}
		}
	}
	if len(c.outFed) > 0 {
		if from, ok := c.outFed[call]; ok && !ctx.piped {
			ctx.piped, ctx.pipeline = true, from
		}
	}
	for _, argv := range c.callArgs(src, call, false) {
		if c.done() {
			return
		}
		c.command(argv, ctx, depth)
	}
}

// callArgs is expandArgs of a simple command. A pipeline stage is looked at by
// the pipeline, by what follows it, and on its own: those looks keep what they
// computed (keep) for the last to use.
func (c *checker) callArgs(src string, call *syntax.CallExpr, keep bool) [][]word {
	if c.cachedCalls.mayHold(call) {
		if alts, ok := c.argsCache[call]; ok {
			return alts
		}
	}
	alts := c.expandArgs(src, call.Args)
	if keep {
		if c.argsCache == nil {
			c.argsCache = map[*syntax.CallExpr][][]word{}
		}
		c.argsCache[call] = alts
		c.cachedCalls.add(call)
	}
	return alts
}

// callFilter is a set of simple commands that may answer yes for one it was
// not given, but never no for one it was: a bit per command, chosen by its
// address (a node's address does not change while the check holds its tree).
type callFilter uint64

func (f *callFilter) add(call *syntax.CallExpr) { *f |= callBit(call) }

func (f callFilter) mayHold(call *syntax.CallExpr) bool { return f&callBit(call) != 0 }

func callBit(call *syntax.CallExpr) callFilter {
	// The low bits of an address are the same for every node (alignment);
	// the next ones tell apart nodes allocated near each other.
	return 1 << (uintptr(unsafe.Pointer(call)) >> 4 % 64)
}

// mayHoldCommands reports whether a word can contain commands or assignments (a
// substitution, arithmetic, or a parameter expansion with an operator), so that
// the walk need not look inside plain words.
func mayHoldCommands(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if _, ok := part.(*syntax.Lit); ok {
			continue // the common part, without a call
		}
		if partMayHoldCommands(part) {
			return true
		}
	}
	return false
}

func partMayHoldCommands(part syntax.WordPart) bool {
	switch p := part.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
		return false
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			if partMayHoldCommands(inner) {
				return true
			}
		}
		return false
	case *syntax.ParamExp:
		return p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Index != nil || p.NestedParam != nil
	}
	return true
}

// expandArgs returns the alternative argvs of a simple command's words.
func (c *checker) expandArgs(src string, args []*syntax.Word) [][]word {
	// The common case, every word with one reading, builds one argv and nothing
	// else; a word with several readings goes to expandArgsAlts.
	argv := c.slabs.words.make(len(args))
	for i, a := range args {
		// simpleWord, with its first case, a plain word (most words), here
		// without its call.
		if s, ok := plainWord(a); ok {
			argv = append(argv, word{s: s})
			continue
		}
		if w, ok := c.simplePartsWord(src, a); ok {
			argv = append(argv, w)
			continue
		}
		alts := c.expandWord(src, a)
		if len(alts) != 1 {
			return c.expandArgsAlts(src, args[i+1:], argv, alts)
		}
		argv = append(argv, alts[0]...)
	}
	return c.slabs.wordLists.one(argv)
}

// expandArgsAlts is expandArgs from the first word with several readings on:
// argv holds the words before it, alts are its readings, and args the words
// after it.
func (c *checker) expandArgsAlts(src string, args []*syntax.Word, argv []word, alts [][]word) [][]word {
	var perWordBuf [8][][]word // the readings of each word, on the stack for most commands
	perWord := append(perWordBuf[:0], c.slabs.wordLists.one(argv), alts)
	total := min(len(alts), maxArgvAlts+1)
	for _, a := range args {
		if w, ok := c.simpleWord(src, a); ok {
			perWord = append(perWord, c.oneReading(w))
			continue
		}
		alts := c.expandWord(src, a)
		perWord = append(perWord, alts)
		total = min(total*len(alts), maxArgvAlts+1)
	}
	if total <= maxArgvAlts {
		alts := perWord[0] // the argv of the words before the first with several readings
		for _, choices := range perWord[1:] {
			alts = product(alts, choices, &c.slabs.words, &c.slabs.wordLists)
		}
		return alts
	}
	// Too many combinations: judge as many argvs as the longest word has readings,
	// the i-th taking each word's i-th reading, so every reading is judged once.
	longest := 0
	for _, choices := range perWord {
		longest = max(longest, len(choices))
	}
	out := make([][]word, longest)
	for i := range out {
		for _, choices := range perWord {
			out[i] = append(out[i], choices[i%len(choices)]...)
		}
	}
	return out
}

// slabs hand out the small slices of one check from shared arrays: the argv
// of every simple command, and the lists of values an expansion builds. Each
// was an allocation of its own, and all of them may live until the check ends
// (argsCache keeps the argvs), so none is freed early: the arrays are emptied
// together when the checker goes back to the pool.
type slabs struct {
	words     slab[word]      // argvs and fields
	wordLists slab[[]word]    // lists of argvs, or of a word's readings
	segs      slab[segment]   // the segments of a value
	segLists  slab[[]segment] // a part's alternative values
}

// reset empties the slabs for the next check; it reports false when one grew
// too large to keep.
func (b *slabs) reset() bool {
	return b.words.reset() && b.wordLists.reset() && b.segs.reset() && b.segLists.reset()
}

// slab hands out slices from a shared array.
type slab[T any] struct {
	buf []T
}

// Sizes of a slab's arrays: a new array is this long unless one slice needs
// more; a checker whose slab grew past maxSlab is not pooled.
const (
	slabChunk = 256
	maxSlab   = 4096
)

// make returns an empty slice with room for n elements. Its capacity is
// exactly n, so that an append past it copies instead of writing over the
// next slice.
func (b *slab[T]) make(n int) []T {
	if cap(b.buf)-len(b.buf) < n {
		b.buf = make([]T, 0, max(n, slabChunk))
	}
	start := len(b.buf)
	b.buf = b.buf[:start+n]
	return b.buf[start : start : start+n]
}

// one returns a slice of the one element v.
func (b *slab[T]) one(v T) []T {
	return append(b.make(1), v)
}

// reset empties the slab, dropping what it points to; it reports false when
// its array grew too large to keep.
func (b *slab[T]) reset() bool {
	if cap(b.buf) > maxSlab {
		return false
	}
	clear(b.buf)
	b.buf = b.buf[:0]
	return true
}

// simpleWord expands a word that has one reading and needs no splitting: plain
// and quoted literals, or any word with an unknown part (then dynamic). Braces,
// known variables and literal substitutions take the general path.
func (c *checker) simpleWord(src string, w *syntax.Word) (word, bool) {
	if s, ok := plainWord(w); ok {
		return word{s: s}, true
	}
	return c.simplePartsWord(src, w)
}

// simplePartsWord is simpleWord of a word that is not plain.
func (c *checker) simplePartsWord(src string, w *syntax.Word) (word, bool) {
	var out word
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok && strings.Contains(lit.Value, "{") {
			return word{}, false // brace expansion
		}
		if sg, ok := staticPart(part, false); ok {
			out.s += sg.s
			out.glob = out.glob || sg.glob
			continue
		}
		if c.unknownPart(src, part) {
			return word{s: sourceOf(src, w), dynamic: true}, true
		}
		return word{}, false
	}
	return out, true
}

// asciiSpace are the ASCII bytes strings.TrimSpace trims.
var asciiSpace = newByteSet("\t\n\v\f\r ")

// wordLit is w.Lit(), without its call for the common word of one part.
func wordLit(w *syntax.Word) string {
	if len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok {
			return lit.Value
		}
		return ""
	}
	return w.Lit()
}

func plainWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		return p.Value, !plainSpecial.in(p.Value)
	case *syntax.SglQuoted:
		return p.Value, !p.Dollar
	}
	return "", false
}

// commandName normalises a program name: its base name, as the kernel would find
// it on PATH or at the path given.
func commandName(s string) string {
	if n := len(s); n > 0 && (asciiSpace[s[0]] || s[0] >= utf8.RuneSelf || asciiSpace[s[n-1]] || s[n-1] >= utf8.RuneSelf) {
		s = strings.TrimSpace(s) // only what can start or end with white space: nearly no name does
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// cleanPath is path.Clean that keeps a leading "//" meaningless, as Linux does.
func cleanPath(s string) string {
	if s == "" {
		return ""
	}
	return path.Clean(s)
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && (i == 0 || !(r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
