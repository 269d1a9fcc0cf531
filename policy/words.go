package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// word is one argument of a simple command after static expansion.
type word struct {
	s       string // the value; for a dynamic word, its source text
	dynamic bool   // only known when the command runs
	glob    bool   // contains unquoted glob characters
}

func (w word) String() string { return w.s }

// Limits that keep a hostile input from making the check slow.
const (
	maxCandidates = 64  // values followed per variable; past it, its use is too complex
	maxWordAlts   = 64  // alternative expansions of one word
	maxArgvAlts   = 64  // alternative argvs of one simple command judged in full
	maxBraceWords = 256 // words one brace expansion may produce
	maxDepth      = 16  // nested sh -c / eval / trap levels
	maxSteps      = 200_000
	maxValueLen   = 4096 // longer variable values are not followed
)

// vars holds what the script assigns: the literal values each variable may take.
type vars map[string]*varInfo

type varInfo struct {
	values   []string
	array    []string // the elements of a literal array, a=(x y z)
	unknown  bool     // assigned something only known at run time
	overflow bool     // assigned more literal values than are followed
}

func (v vars) add(name, value string) {
	info := v.info(name)
	if info.unknown {
		return
	}
	if len(value) > maxValueLen {
		info.unknown = true
		return
	}
	for _, have := range info.values {
		if have == value {
			return
		}
	}
	if len(info.values) >= maxCandidates {
		info.unknown, info.overflow = true, true
		return
	}
	info.values = append(info.values, value)
}

func (v vars) setUnknown(name string) { v.info(name).unknown = true }

func (v vars) info(name string) *varInfo {
	info := v[name]
	if info == nil {
		info = &varInfo{}
		v[name] = info
	}
	return info
}

// lookup returns the values name may have, or ok=false when they are not all known.
func (v vars) lookup(name string) ([]string, bool) {
	return v[name].known()
}

// known returns the values of a variable, or ok=false when they are not all
// known (info is nil for a variable the script does not bind).
func (info *varInfo) known() ([]string, bool) {
	if info == nil || info.unknown || len(info.values) == 0 {
		return nil, false
	}
	return info.values, true
}

// setArray records a literal array; an array assigned twice is not followed.
func (v vars) setArray(name string, elems []string) {
	info := v.info(name)
	if info.array != nil || info.unknown {
		info.unknown = true
		return
	}
	info.array = elems
}

// ifs returns the field separators in effect: the first known value of IFS, or the
// shell's default.
func (v vars) ifs() string {
	if vals, ok := v.lookup("IFS"); ok {
		return vals[0]
	}
	return " \t\n"
}

// segment is part of a word's value, and whether word splitting applies to it.
type segment struct {
	s       string
	split   bool // an unquoted expansion: split on IFS
	dynamic bool
	glob    bool
	brk     bool // a field boundary, between the elements of "${a[@]}"
}

// expandWord returns the alternative field lists a word may expand to. A word with
// braces expands to several words first.
func (c *checker) expandWord(src string, w *syntax.Word) [][]word {
	if s, ok := plainWord(w); ok { // the common case: one plain literal or quoted string
		return c.oneReading(word{s: s})
	}
	if !hasBrace(w) {
		return c.expandOne(src, w) // what SplitBraces would find: nothing, without copying the word
	}
	orig := w
	split := *w // SplitBraces rewrites its word; the tree is still walked after this
	w = &split
	if !syntax.SplitBraces(w) {
		return c.expandOne(src, orig)
	}
	if braceCount(w) > maxBraceWords {
		// Too many words to judge one by one, and one of them may be "/".
		c.refuse(RuleTooComplex, sourceOf(src, orig))
		return [][]word{{{s: sourceOf(src, orig), dynamic: true}}}
	}
	var fields []word
	for _, bw := range expand.Braces(w) {
		alts := c.expandOne(src, bw)
		fields = append(fields, alts[0]...) // braces and variables together: the first reading
	}
	return [][]word{fields}
}

// hasBrace reports whether a literal part of w holds a brace, the test
// syntax.SplitBraces starts with: without one it changes nothing.
func hasBrace(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok && strings.IndexByte(lit.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// braceCount is how many words a brace expansion would make, without making them.
func braceCount(w *syntax.Word) int {
	n := 1
	for _, part := range w.Parts {
		be, ok := part.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if be.Sequence {
			k = maxBraceWords + 1
			if len(be.Elems) >= 2 {
				a, err1 := strconv.Atoi(be.Elems[0].Lit())
				b, err2 := strconv.Atoi(be.Elems[1].Lit())
				if err1 == nil && err2 == nil {
					k = max(a-b, b-a) + 1
				} else if len(be.Elems[0].Lit()) == 1 && len(be.Elems[1].Lit()) == 1 {
					k = 26
				}
			}
		} else {
			for _, e := range be.Elems {
				k += braceCount(e)
			}
		}
		n *= max(k, 1)
		if n > maxBraceWords {
			return n
		}
	}
	return n
}

// expandOne expands a word without braces into alternative field lists.
func (c *checker) expandOne(src string, w *syntax.Word) [][]word {
	c.step()
	alts := c.slabs.segLists.one(c.slabs.segs.make(len(w.Parts)))
	for _, part := range w.Parts {
		if sg, ok := staticPart(part, false); ok { // most parts: no alternatives to multiply
			for i := range alts {
				alts[i] = append(alts[i], sg)
			}
			continue
		}
		if c.unknownPart(src, part) { // one unknown part makes the whole word unknown
			return c.oneReading(word{s: sourceOf(src, w), dynamic: true})
		}
		choices := c.partSegments(src, part, false)
		if len(alts)*len(choices) > maxWordAlts {
			return [][]word{{{s: sourceOf(src, w), dynamic: true}}}
		}
		if len(w.Parts) == 1 {
			alts = choices // what product would copy them into; splitFields only reads them
			continue
		}
		alts = product(alts, choices, &c.slabs.segs, &c.slabs.segLists)
	}
	out := c.slabs.wordLists.make(len(alts))
	ifs := c.vars.ifs()
	for _, segs := range alts {
		out = append(out, splitFields(segs, ifs, sourceOf(src, w), &c.slabs.words))
	}
	return out
}

// product appends each choice to each alternative. With one choice, the common
// case, it appends in place rather than copying every alternative; with more,
// the copies are carved from the check's slabs.
func product[T any](alts [][]T, choices [][]T, items *slab[T], lists *slab[[]T]) [][]T {
	if len(choices) == 1 {
		for i := range alts {
			alts[i] = append(alts[i], choices[0]...)
		}
		return alts
	}
	next := lists.make(len(alts) * len(choices))
	for _, a := range alts {
		for _, ch := range choices {
			next = append(next, append(append(items.make(len(a)+len(ch)), a...), ch...))
		}
	}
	return next
}

// splitFields joins segments into fields, splitting the unquoted expansions
// on ifs. The first field takes its room from items: most words are one.
func splitFields(segs []segment, ifs, source string, items *slab[word]) []word {
	var fields []word
	var cur word
	started := false // a quoted empty string is still a field
	flush := func() {
		if started {
			if fields == nil {
				fields = items.make(1)
			}
			fields = append(fields, cur)
		}
		cur, started = word{}, false
	}
	for _, sg := range segs {
		if sg.dynamic {
			return items.one(word{s: source, dynamic: true})
		}
		if sg.brk {
			flush()
			continue
		}
		if !sg.split {
			cur.s += sg.s
			cur.glob = cur.glob || sg.glob
			started = true
			continue
		}
		// The runes between separators are appended a run at a time, not one
		// by one; a byte that is not UTF-8 reads as U+FFFD, as it does when
		// ranging over a string.
		run := 0 // where the runes not yet appended begin
		for i := 0; i < len(sg.s); {
			r, size := utf8.DecodeRuneInString(sg.s[i:])
			sep := strings.ContainsRune(ifs, r)
			if !sep && (r != utf8.RuneError || size > 1) {
				i += size
				continue
			}
			if run < i {
				cur.s += sg.s[run:i]
				started = true
			}
			if sep {
				flush()
			} else {
				cur.s += string(r)
				started = true
			}
			i += size
			run = i
		}
		if run < len(sg.s) {
			cur.s += sg.s[run:]
			started = true
		}
	}
	flush()
	return fields
}

// joinedText is the length of the text of a double-quoted string's segments
// (but for breaks), and whether one is dynamic.
func joinedText(segs []segment) (n int, dynamic bool) {
	for _, sg := range segs {
		if !sg.brk {
			n += len(sg.s)
			dynamic = dynamic || sg.dynamic
		}
	}
	return n, dynamic
}

// staticPart returns the one segment of a part that needs no lookup: a literal, a
// single-quoted string, or a double-quoted string of literals.
func staticPart(part syntax.WordPart, quoted bool) (segment, bool) {
	switch p := part.(type) {
	case *syntax.Lit:
		s, glob := unescapeLit(p.Value, quoted)
		return segment{s: s, glob: glob}, true
	case *syntax.SglQuoted:
		if p.Dollar {
			return segment{s: ansiC(p.Value)}, true
		}
		return segment{s: p.Value}, true
	case *syntax.DblQuoted:
		if len(p.Parts) == 1 { // "text": its one literal, without copying it through a builder
			lit, ok := p.Parts[0].(*syntax.Lit)
			if !ok {
				return segment{}, false
			}
			s, _ := unescapeLit(lit.Value, true)
			return segment{s: s}, true
		}
		// Several parts: static only if all are literals ("a\"b" is three), which
		// is known before building anything ("text $x" is not static), and
		// the text is built in one allocation (unescaping only shortens).
		n := 0
		for _, inner := range p.Parts {
			lit, ok := inner.(*syntax.Lit)
			if !ok {
				return segment{}, false
			}
			n += len(lit.Value)
		}
		var b strings.Builder
		b.Grow(n)
		for _, inner := range p.Parts {
			s, _ := unescapeLit(inner.(*syntax.Lit).Value, true)
			b.WriteString(s)
		}
		return segment{s: b.String()}, true
	}
	return segment{}, false
}

// unknownPart reports, without building its values, that a part is only known
// at run time: an unknown variable, a substitution that is not a literal echo,
// arithmetic, or a double-quoted string holding one of those.
func (c *checker) unknownPart(src string, part syntax.WordPart) bool {
	switch p := part.(type) {
	case *syntax.ParamExp:
		info := c.paramInfo(p)
		if info != nil && info.overflow {
			return false // partSegments refuses it as too complex
		}
		if info == nil && p.Param != nil && p.Exp == nil && p.Param.Value != "*" && p.Param.Value != "IFS" && p.Param.Value != "PWD" {
			return true // never bound by the script: arrayElems and paramValues find nothing
		}
		if _, ok := c.arrayElems(p, info); ok {
			return false
		}
		_, ok := c.paramValues(p, info)
		return !ok
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			if c.unknownPart(src, inner) {
				return true
			}
		}
		return false
	case *syntax.CmdSubst:
		if len(p.Stmts) == 1 && len(p.Stmts[0].Redirs) == 0 {
			if call, ok := p.Stmts[0].Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				switch commandName(wordLit(call.Args[0])) {
				case "echo", "printf":
					return false // perhaps a literal echo: partSegments decides
				}
			}
		}
		if len(p.Stmts) == 1 {
			if b, ok := p.Stmts[0].Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe {
				return false // perhaps literal text through filters: partSegments decides
			}
		}
		return true
	case *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
		return true
	}
	return false
}

// partSegments returns the alternative values of one part of a word; each
// alternative is a list of segments.
func (c *checker) partSegments(src string, part syntax.WordPart, quoted bool) [][]segment {
	switch p := part.(type) {
	case *syntax.Lit:
		s, glob := unescapeLit(p.Value, quoted)
		return c.oneValue(segment{s: s, glob: glob})
	case *syntax.SglQuoted:
		if p.Dollar {
			return c.oneValue(segment{s: ansiC(p.Value)})
		}
		return c.oneValue(segment{s: p.Value})
	case *syntax.DblQuoted:
		alts := c.slabs.segLists.one(c.slabs.segs.make(len(p.Parts)))
		for _, inner := range p.Parts {
			if sg, ok := staticPart(inner, true); ok { // as below, without the slices
				for i := range alts {
					alts[i] = append(alts[i], sg)
				}
				continue
			}
			choices := c.partSegments(src, inner, true)
			if len(alts)*len(choices) > maxWordAlts {
				return c.oneValue(segment{s: sourceOf(src, p), dynamic: true})
			}
			if len(p.Parts) == 1 {
				alts = choices // "$x": what product would copy them into; the join below only reads them
				continue
			}
			alts = product(alts, choices, &c.slabs.segs, &c.slabs.segLists)
		}
		// A quoted part is one piece of text: join, never split.
		out := c.slabs.segLists.make(len(alts))
		for _, a := range alts {
			if len(a) == 1 && !a[0].brk { // one piece already: what the join would make of it
				if a[0].dynamic {
					out = append(out, c.slabs.segs.one(segment{s: sourceOf(src, p), dynamic: true}))
				} else {
					out = append(out, c.slabs.segs.one(segment{s: a[0].s}))
				}
				continue
			}
			// Known before building: a dynamic string is its source, and the
			// text of the others is built in one allocation, not one a piece.
			n, dyn := joinedText(a)
			if dyn {
				out = append(out, c.slabs.segs.one(segment{s: sourceOf(src, p), dynamic: true}))
				continue
			}
			var b strings.Builder
			b.Grow(n)
			var segs []segment
			for _, sg := range a {
				if sg.brk { // "${a[@]}": one field per element, even quoted
					segs = append(segs, segment{s: b.String()}, sg)
					b.Reset()
					continue
				}
				b.WriteString(sg.s)
			}
			out = append(out, append(segs, segment{s: b.String()}))
		}
		return out
	case *syntax.ParamExp:
		info := c.paramInfo(p)
		if info != nil && info.overflow {
			c.refuse(RuleTooComplex, sourceOf(src, p))
		}
		if elems, ok := c.arrayElems(p, info); ok {
			var segs []segment
			if len(elems) > 0 {
				segs = c.slabs.segs.make(2*len(elems) - 1)
			}
			for i, e := range elems {
				if i > 0 {
					segs = append(segs, segment{brk: true})
				}
				segs = append(segs, segment{s: e, split: !quoted})
			}
			return c.slabs.segLists.one(segs)
		}
		if vals, ok := c.paramValues(p, info); ok {
			out := c.slabs.segLists.make(len(vals))
			for _, v := range vals {
				out = append(out, c.slabs.segs.one(segment{s: v, split: !quoted}))
			}
			return out
		}
	case *syntax.CmdSubst:
		if text, ok := c.cmdSubstText(src, p); ok {
			return c.oneValue(segment{s: text, split: !quoted})
		}
	}
	// Other command and arithmetic substitutions, process substitution, extended
	// globs, unknown parameters: only known when the command runs.
	return c.oneValue(segment{s: sourceOf(src, part), dynamic: true})
}

// oneValue is the list of a part's one value, of one segment, from the
// check's slabs.
func (c *checker) oneValue(sg segment) [][]segment {
	return c.slabs.segLists.one(c.slabs.segs.one(sg))
}

// oneReading is the list of a word's one reading, of one field, from the
// check's slabs.
func (c *checker) oneReading(w word) [][]word {
	return c.slabs.wordLists.one(c.slabs.words.one(w))
}

// cmdSubstText is the output of a command substitution when it is known:
// $(echo rm), the output of a literal echo or printf.
func (c *checker) cmdSubstText(src string, p *syntax.CmdSubst) (string, bool) {
	if len(p.Stmts) == 1 && len(p.Stmts[0].Redirs) == 0 {
		if call, ok := p.Stmts[0].Cmd.(*syntax.CallExpr); ok {
			if text, ok := c.literalOutput(src, call); ok {
				return strings.Join(text, " "), true
			}
		}
	}
	if len(p.Stmts) == 1 {
		if b, ok := p.Stmts[0].Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe {
			// $(echo cm0gLXJmIC8= | base64 -d): literal text through filters.
			var buf [8]*syntax.Stmt
			text, known := "", false
			for _, st := range pipeStages(buf[:0], p.Stmts[0]) {
				if text, known = c.literalText(src, st, text, known); !known {
					return "", false
				}
			}
			return strings.TrimRight(text, "\n"), true // $(...) drops the trailing newlines
		}
	}
	return "", false
}

// pipeStages appends the stages of the pipeline s (a | b | c).
func pipeStages(stages []*syntax.Stmt, s *syntax.Stmt) []*syntax.Stmt {
	if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && bc.Op == syntax.Pipe {
		stages = pipeStages(stages, bc.X)
		return pipeStages(stages, bc.Y)
	}
	return append(stages, s)
}

// paramInfo is what the script binds to the parameter of p, nil if nothing:
// it is looked up once per use of the parameter, and handed to arrayElems and
// paramValues.
func (c *checker) paramInfo(p *syntax.ParamExp) *varInfo {
	if p.Param == nil {
		return nil
	}
	return c.vars[p.Param.Value]
}

// paramValues resolves $name, ${name} and ${name:-default} from the script's own
// literal assignments; info is paramInfo(p).
func (c *checker) paramValues(p *syntax.ParamExp, info *varInfo) ([]string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil ||
		p.Repl != nil || p.Names != 0 || p.NestedParam != nil || len(p.Modifiers) > 0 {
		return nil, false
	}
	vals, ok := info.known()
	if !ok && p.Param.Value == "IFS" && info == nil {
		vals, ok = []string{" \t\n"}, true // never assigned: the shell's default
	}
	if !ok && p.Param.Value == "PWD" && info == nil {
		vals, ok = []string{c.dir()}, true // where the script is (cd), else the working directory
	}
	if p.Slice != nil {
		// ${x:OFFSET:LENGTH} of literal numbers: the substrings; any other
		// slice is unknown, never the whole value.
		if !ok || p.Exp != nil {
			return nil, false
		}
		return sliceValues(vals, p.Slice)
	}
	if p.Exp == nil {
		return vals, ok
	}
	switch p.Exp.Op {
	case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix:
		// ${PWD%/*}: the values less what the pattern matches.
		pat, pok := c.staticString(p.Exp.Word)
		if !ok || !pok {
			return nil, false
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = trimPattern(v, pat, p.Exp.Op)
		}
		return out, true
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		def, dok := c.staticString(p.Exp.Word)
		if !dok {
			return nil, false
		}
		if !ok {
			return []string{def}, true // unset in this script: the default is used
		}
		return append(vals[:len(vals):len(vals)], def), true
	}
	return nil, false
}

// arrayElems resolves "${a[@]}", ${a[*]} and $a of a literal array; info is
// paramInfo(p).
func (c *checker) arrayElems(p *syntax.ParamExp, info *varInfo) ([]string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Slice != nil || p.Repl != nil || p.Exp != nil {
		return nil, false
	}
	if p.Param.Value == "*" {
		info = c.vars["@"]
	}
	if info == nil || info.unknown || info.array == nil {
		return nil, false
	}
	if p.Param.Value == "@" || p.Param.Value == "*" {
		return info.array, true
	}
	if p.Index == nil {
		return info.array[:min(1, len(info.array))], true // $a is the first element
	}
	if w, ok := p.Index.(*syntax.Word); ok && (w.Lit() == "@" || w.Lit() == "*") {
		return info.array, true
	}
	return nil, false
}

// trimPattern is ${v%pat}, ${v%%pat}, ${v#pat} or ${v##pat}.
func trimPattern(v, pat string, op syntax.ParExpOperator) string {
	switch op {
	case syntax.RemSmallSuffix:
		for i := len(v); i >= 0; i-- {
			if globMatch(pat, v[i:]) {
				return v[:i]
			}
		}
	case syntax.RemLargeSuffix:
		for i := 0; i <= len(v); i++ {
			if globMatch(pat, v[i:]) {
				return v[:i]
			}
		}
	case syntax.RemSmallPrefix:
		for i := 0; i <= len(v); i++ {
			if globMatch(pat, v[:i]) {
				return v[i:]
			}
		}
	case syntax.RemLargePrefix:
		for i := len(v); i >= 0; i-- {
			if globMatch(pat, v[:i]) {
				return v[i:]
			}
		}
	}
	return v
}

// staticString evaluates a word that must be one static string (no splitting).
func (c *checker) staticString(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	if len(w.Parts) == 1 { // the common case: one literal or quoted string
		if sg, ok := staticPart(w.Parts[0], true); ok {
			return sg.s, true
		}
	}
	var b strings.Builder
	for _, part := range w.Parts {
		if sg, ok := staticPart(part, true); ok { // as partSegments would, without its slices
			b.WriteString(sg.s)
			continue
		}
		alts := c.partSegments("", part, true)
		if len(alts) != 1 {
			return "", false
		}
		for _, sg := range alts[0] {
			if sg.dynamic {
				return "", false
			}
			b.WriteString(sg.s)
		}
	}
	return b.String(), true
}

// unescapeLit removes the backslashes of an unquoted (or double-quoted) literal and
// reports whether it has unquoted glob characters.
func unescapeLit(s string, quoted bool) (string, bool) {
	i := litSpecial.index(s)
	if i < 0 {
		return s, false
	}
	if strings.IndexByte(s[i:], '\\') < 0 {
		// Glob characters and no backslash: nothing to rewrite.
		return s, !quoted && (s[i] != '[' || strings.IndexByte(s[i:], ']') >= 0 || strings.ContainsAny(s[i:], "*?"))
	}
	var b strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' && i+1 < len(s) {
			next := s[i+1]
			switch {
			case next == '\n':
				i++ // line continuation
				continue
			case !quoted || strings.IndexByte("$`\"\\", next) >= 0:
				b.WriteByte(next)
				i++
				continue
			}
		}
		if !quoted && (ch == '*' || ch == '?' || ch == '[' && strings.IndexByte(s[i+1:], ']') >= 0) {
			glob = true // a [ without its ] is itself: [ -f x ] runs [
		}
		b.WriteByte(ch)
	}
	return b.String(), glob
}

// byteSet is a set of bytes, built once, to scan the short literals of every
// word: strings.ContainsAny builds its set on each call, which costs more than
// the scan.
type byteSet [256]bool

func newByteSet(chars string) *byteSet {
	var set byteSet
	for i := 0; i < len(chars); i++ {
		set[chars[i]] = true
	}
	return &set
}

// in reports whether s holds a byte of the set.
func (set *byteSet) in(s string) bool { return set.index(s) >= 0 }

// index returns where the first byte of the set is in s, or -1.
func (set *byteSet) index(s string) int {
	for i := 0; i < len(s); i++ {
		if set[s[i]] {
			return i
		}
	}
	return -1
}

var (
	litSpecial   = newByteSet(`\*?[`)  // what unescapeLit has to rewrite or note
	plainSpecial = newByteSet(`\*?[{`) // and braces: what makes a literal not plain
)

// ansiC decodes the escapes of a $'...' string.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch ch := s[i]; ch {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			n, k := hexDigits(s[i+1:], 2)
			if k == 0 {
				b.WriteString(`\x`)
				continue
			}
			if n == 0 {
				return b.String() // a NUL ends the string
			}
			b.WriteByte(byte(n))
			i += k
		case 'u', 'U':
			width := 4
			if ch == 'U' {
				width = 8
			}
			n, k := hexDigits(s[i+1:], width)
			if k == 0 {
				b.WriteByte('\\')
				b.WriteByte(ch)
				continue
			}
			b.WriteRune(rune(n))
			i += k
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := 0, 0
			for k < 3 && i+k < len(s) && s[i+k] >= '0' && s[i+k] <= '7' {
				n = n*8 + int(s[i+k]-'0')
				k++
			}
			if n == 0 {
				return b.String() // bash ends the string at a NUL: $'rm\0x' is rm
			}
			b.WriteByte(byte(n))
			i += k - 1
		default:
			b.WriteByte(ch) // \\ \' \" \? and unknown escapes
		}
	}
	return b.String()
}

func hexDigits(s string, maxLen int) (int, int) {
	n, k := 0, 0
	for k < maxLen && k < len(s) {
		d, err := strconv.ParseUint(s[k:k+1], 16, 8)
		if err != nil {
			break
		}
		n = n*16 + int(d)
		k++
	}
	return n, k
}

// sourceOf is the source text of a node, for dynamic words and messages.
func sourceOf(src string, n syntax.Node) string {
	if src == "" || n == nil {
		return "<dynamic>"
	}
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return "<dynamic>"
	}
	return src[start:end]
}

// sliceValues is ${x:OFFSET:LENGTH} of each of vals, for literal numbers
// (a negative offset counts from the end, as bash's ${x: -1}).
func sliceValues(vals []string, sl *syntax.Slice) ([]string, bool) {
	off, ok := arithmLiteral(sl.Offset)
	if !ok {
		return nil, false
	}
	length, hasLen := 0, sl.Length != nil
	if hasLen {
		if length, ok = arithmLiteral(sl.Length); !ok || length < 0 {
			return nil, false
		}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		r := []rune(v)
		start := off
		if start < 0 {
			start += len(r)
		}
		if start < 0 || start > len(r) {
			out[i] = ""
			continue
		}
		end := len(r)
		if hasLen && start+length < end {
			end = start + length
		}
		out[i] = string(r[start:end])
	}
	return out, true
}

// arithmLiteral is the value of an arithmetic expression that is a literal
// number, or its negation.
func arithmLiteral(e syntax.ArithmExpr) (int, bool) {
	if e == nil {
		return 0, true // ${x::2}: the offset is 0
	}
	neg := false
	if u, ok := e.(*syntax.UnaryArithm); ok && u.Op == syntax.Minus && !u.Post {
		neg, e = true, u.X
	}
	w, ok := e.(*syntax.Word)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(w.Lit())
	if err != nil || n > 1<<20 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
