package policy

// The shell parser recurses once for every construct a script nests, and
// some chains of operators it parses by recursion too (`! ! ! a` in `[[`,
// `1**1**1` in arithmetic). A Go stack has no limit below a gigabyte, and
// past that the process dies: no recover runs, so the check's fail-closed
// guard (finish) cannot turn it into a refusal. So every script is measured
// before it is parsed (tooComplex), in one pass over its bytes that allocates
// nothing, and one that nests deeper than maxNesting, or holds more than
// maxTokens words and operators, is refused as too-complex unparsed.
//
// What one level costs the parser (mvdan.cc/sh/v3 v3.14.1, measured with 64
// KiB of each construct, its goroutine's stack after the parse): about 2 KiB
// for an arithmetic `(`, 3 KiB for `"$(`, 1 KiB for a subshell `( `, 1.5 KiB
// for `$(`, 0.5 KiB for `${`, `[[ (` or `<(`, and 0.1 to 0.25 KiB for an if,
// a loop, a case or an operator of arithmetic or `[[`; the stack doubles as it
// grows, and the old one is copied, so the peak is up to three times the
// need. Without a bound 128 KiB of `(` took 134 MiB of stack and a second of
// CPU, and about 900 KB of `"$(` overflowed the stack. At maxNesting levels the
// parser's stack stays under about 1.5 MiB. A flat script costs the parser
// 120 to 200 bytes a token (1 MiB of `a|` allocated 200 MB), so maxTokens
// bounds that; a script of maxTokens would spend the check's step budget
// (maxSteps) long before it was judged.
//
// The scan follows the shell's quoting as the parser does: nothing nests in
// single quotes, a comment or a quoted here-document; in double quotes and
// unquoted here-documents only `$(`, `${`, `$((`, `$[` and backquotes do. It
// counts a level for every opener it sees where the parser may open one, and
// drops a level only for a closer that matches the innermost opener it
// counted, where the parser takes it as a closer: a reserved word (`fi`,
// `done`, `esac`, `}`) only where a command may end. Where it cannot tell,
// it counts too many, never too few: a hostile script can only make it
// refuse, and no script a person writes comes near the bound.
const (
	maxNesting = 500
	maxTokens  = 100_000
	// maxPendingHeredocs bounds the here-documents one line may start.
	maxPendingHeredocs = 16
)

// frame is what a level of nesting is, which decides how the text inside it
// is read (mode) and which closer ends it.
type frame uint8

const (
	fSub     frame = iota // ( in command position: a subshell, closed by )
	fParen                // $( <( >( a=( and ( elsewhere, closed by )
	fBrace                // { ... } group, closed by } where a command may end
	fBack                 // ` ... `
	fIf                   // if ... fi
	fLoop                 // while, until, for, select ... done
	fCase                 // case ... esac
	fDQ                   // "..."
	fParam                // ${ ... }
	fArith                // $(( (( ... ))
	fAParen               // ( inside arithmetic
	fIndex                // a[ ... ] and $[ ... ]: arithmetic closed by ]
	fTest                 // [[ ... ]]
	fTParen               // ( inside [[ ]]
	fArithOp              // an operator of arithmetic: the parser may recurse on it
	fTestOp               // ! && || inside [[ ]]
	fHdoc                 // the body of an unquoted here-document
)

type mode uint8

const (
	mCmd mode = iota
	mDQ
	mParam
	mArith
	mTest
	mHdoc
)

var frameMode = [...]mode{
	fSub: mCmd, fParen: mCmd, fBrace: mCmd, fBack: mCmd, fIf: mCmd, fLoop: mCmd, fCase: mCmd,
	fDQ: mDQ, fParam: mParam, fArith: mArith, fAParen: mArith, fIndex: mArith,
	fTest: mTest, fTParen: mTest, fArithOp: mArith, fTestOp: mTest, fHdoc: mHdoc,
}

// heredoc is a here-document whose body is still to come: its delimiter as
// written (quotes not yet removed).
type heredoc struct {
	start, end int
	quoted     bool // the body is literal
	tabs       bool // <<-: leading tabs are stripped
}

// scanner is the state of tooComplex's pass. It lives on the caller's stack.
type scanner struct {
	src    string
	i      int
	sp     int
	stack  [maxNesting]frame
	tokens int
	// openOK: a reserved word or { here may open a compound command (counted
	// generously); closeOK: a reserved word or } here may close one (strictly).
	openOK, closeOK bool
	// cont: the last ) closed a $( in a word, which goes on.
	cont bool
	// letOps counts the operators of a let command's arithmetic, levels
	// until the command ends.
	let    bool
	letOps int
	// keepOpen: the next word is a name after `function` or `coproc`, after
	// which a { still opens.
	keepOpen bool
	// body is the start of the current line of a here-document's body.
	body     int
	pending  [maxPendingHeredocs]heredoc
	npending int
	// hdoc is the here-document whose body is being read.
	hdoc heredoc
}

// tooComplex reports whether parsing src could nest deeper than maxNesting
// or build more than maxTokens words and operators.
func tooComplex(src string) bool {
	if len(src) < maxNesting/2 {
		return false // every level takes at least two bytes but ( and `, which cannot fill 500 levels here
	}
	s := scanner{src: src, openOK: true}
	return !s.run()
}

// run scans the whole source; it returns false as soon as a bound is passed.
func (s *scanner) run() bool {
	for s.i < len(s.src) {
		if s.tokens > maxTokens {
			return false
		}
		m := mCmd
		if s.sp > 0 {
			m = frameMode[s.stack[s.sp-1]]
		}
		if m != mHdoc {
			// The parser drops a line continuation wherever it is,
			// within a word or an operator too (i\<newline>f is if).
			if s.i = s.skipCont(s.i); s.i == len(s.src) {
				break
			}
		}
		var ok bool
		switch m {
		case mCmd:
			ok = s.cmd()
		case mDQ:
			ok = s.dq()
		case mParam:
			ok = s.param()
		case mArith:
			ok = s.arith()
		case mTest:
			ok = s.test()
		case mHdoc:
			ok = s.hdocBody()
		}
		if !ok {
			return false
		}
	}
	return s.tokens <= maxTokens
}

func (s *scanner) push(f frame) bool {
	if s.sp == maxNesting {
		return false
	}
	s.stack[s.sp] = f
	s.sp++
	return true
}

func (s *scanner) top() frame {
	if s.sp == 0 {
		return 255
	}
	return s.stack[s.sp-1]
}

// popTo drops the operators above the innermost frame and pops it if it is f.
func (s *scanner) popTo(f frame) bool {
	for s.sp > 0 && (s.stack[s.sp-1] == fArithOp || s.stack[s.sp-1] == fTestOp) {
		s.sp--
	}
	if s.top() == f {
		s.sp--
		return true
	}
	return false
}

// skipCont returns the first index from j that is not a line continuation.
func (s *scanner) skipCont(j int) int {
	for j+1 < len(s.src) && s.src[j] == '\\' && s.src[j+1] == '\n' {
		j += 2
	}
	return j
}

// peek returns the byte k bytes after s.i, line continuations not counted.
func (s *scanner) peek(k int) byte {
	j := s.skipCont(s.i)
	for ; k > 0 && j < len(s.src); k-- {
		j = s.skipCont(j + 1)
	}
	if j < len(s.src) {
		return s.src[j]
	}
	return 0
}

// adv moves n bytes on, line continuations not counted.
func (s *scanner) adv(n int) {
	for ; n > 0 && s.i < len(s.src); n-- {
		s.i = s.skipCont(s.i + 1)
	}
}

// isDelim reports whether b ends an unquoted word.
func isDelim(b byte) bool {
	switch b {
	case 0, ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

// skipSingle skips a '...' string from its opening quote.
func (s *scanner) skipSingle() {
	s.i++
	for s.i < len(s.src) && s.src[s.i] != '\'' {
		s.i++
	}
	s.i++
}

// skipANSI skips a $'...' string from its $.
func (s *scanner) skipANSI() {
	s.adv(2)
	for s.i < len(s.src) && s.src[s.i] != '\'' {
		if s.src[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
}

// dollar reads what a $ opens, in any mode but a single-quoted string.
func (s *scanner) dollar() bool {
	switch s.peek(1) {
	case '(':
		if s.peek(2) == '(' {
			s.adv(3)
			return s.push(fArith)
		}
		s.adv(2)
		s.openOK, s.closeOK = true, false
		return s.push(fParen)
	case '{':
		s.adv(2)
		return s.push(fParam)
	case '[':
		s.adv(2)
		return s.push(fIndex)
	case '"':
		s.adv(2)
		return s.push(fDQ)
	case '\'':
		s.skipANSI()
		return true
	}
	s.i++
	return true
}

// backquote opens or closes a `...` command substitution.
func (s *scanner) backquote() bool {
	s.i++
	if s.popTo(fBack) {
		return true
	}
	s.openOK, s.closeOK = true, false
	return s.push(fBack)
}

// cmd reads one step of command text.
func (s *scanner) cmd() bool {
	b := s.src[s.i]
	switch b {
	case ' ', '\t':
		s.i++
		return true
	case '\n':
		s.i++
		s.tokens++
		s.openOK, s.closeOK = true, true
		s.let, s.letOps = false, 0
		if s.npending > 0 {
			return s.startBody()
		}
		return true
	case ';', '&', '|':
		// One operator (; ;; ;& & && | || |&): a command may start after
		// any, and end after ; and a lone &.
		s.tokens++
		s.openOK, s.closeOK = true, b == ';' || b == '&' && s.peek(1) != '&'
		s.adv(1)
		for c := s.peek(0); c == ';' || c == '&' || c == '|'; c = s.peek(0) {
			s.adv(1)
		}
		s.cont, s.let, s.letOps = false, false, 0
		return true
	case '<', '>':
		s.tokens++
		s.openOK, s.closeOK = false, false
		if s.peek(1) == '(' {
			s.adv(2)
			s.openOK = true
			return s.push(fParen)
		}
		if b == '<' && s.peek(1) == '<' && s.peek(2) != '<' {
			s.adv(2)
			return s.heredoc()
		}
		s.i++
		return true
	case '(':
		s.tokens++
		if s.peek(1) == '(' && s.openOK {
			s.adv(2)
			return s.push(fArith)
		}
		f := fParen
		if s.openOK {
			f = fSub
		}
		s.i++
		s.openOK, s.closeOK = true, false
		return s.push(f)
	case ')':
		s.tokens++
		s.i++
		switch {
		case s.popTo(fSub):
			s.openOK, s.closeOK = true, true
		case s.popTo(fParen):
			s.openOK, s.closeOK = false, false
			s.cont = true // $(...)#x: the # is the word's
		case s.top() == fCase:
			s.openOK, s.closeOK = true, false // a pattern's ): its command follows
		default:
			s.openOK, s.closeOK = false, false
		}
		return true
	case '#':
		if prev := s.prev(); prev == 0 || isDelim(prev) && !(prev == ')' && s.cont) {
			s.comment()
			return true
		}
	}
	s.cont = false
	return s.word()
}

// prev returns the byte before s.i, line continuations not counted (0 at
// the start).
func (s *scanner) prev() byte {
	j := s.i - 1
	for j >= 1 && s.src[j] == '\n' && s.src[j-1] == '\\' {
		n := 0 // a continuation is an odd run of backslashes before the newline
		for j-1-n >= 0 && s.src[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			break
		}
		j -= 2
	}
	if j < 0 {
		return 0
	}
	return s.src[j]
}

// comment skips a comment, which ends at its line's end, or at a backquote
// that closes a command substitution it is in.
func (s *scanner) comment() {
	inBack := false
	for k := 0; k < s.sp; k++ {
		inBack = inBack || s.stack[k] == fBack
	}
	for s.i < len(s.src) && s.src[s.i] != '\n' && !(inBack && s.src[s.i] == '`') {
		s.i++
	}
}

// word reads one unquoted word, with its quoted and expanded parts up to the
// first that opens a level, in command text.
func (s *scanner) word() bool {
	s.tokens++
	start := s.i
	if s.openOK || s.closeOK || s.keepOpen {
		var buf [8]byte
		if n, end, ok := s.reserved(&buf); ok {
			return s.keyword(string(buf[:n]), end)
		}
	}
	keep := s.keepOpen
	s.openOK, s.closeOK, s.keepOpen = keep, false, false
	for s.i < len(s.src) {
		b := s.src[s.i]
		switch b {
		case '\'':
			s.skipSingle()
			continue
		case '"':
			s.i++
			return s.push(fDQ)
		case '\\':
			s.i += 2
			continue
		case '$':
			return s.dollar()
		case '`':
			return s.backquote()
		case '[':
			if s.i > start && isNameByte(s.src[s.i-1]) {
				s.i++
				return s.push(fIndex) // a subscript: arithmetic
			}
		}
		if isDelim(b) {
			return true
		}
		if s.let && isArithOp(b) {
			if s.letOps++; s.sp+s.letOps >= maxNesting {
				return false
			}
		}
		s.i++
	}
	return true
}

func isArithOp(b byte) bool {
	switch b {
	case '!', '~', '-', '+', '=', '?', '*', '/', '%', '^', ':', ',':
		return true
	}
	return false
}

func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// reserved reads a word made of the bytes of reserved words, {, }, ! and
// [[, ]], ending at a delimiter, into buf (line continuations dropped), and
// returns its length and where it ends.
func (s *scanner) reserved(buf *[8]byte) (n, end int, ok bool) {
	j := s.i
	for j < len(s.src) {
		b := s.src[j]
		if !(b >= 'a' && b <= 'z' || b == '{' || b == '}' || b == '[' || b == ']' || b == '!') {
			break
		}
		if n == len(buf) {
			return 0, 0, false
		}
		buf[n] = b
		n++
		j = s.skipCont(j + 1)
	}
	if n == 0 || j < len(s.src) && !isDelim(s.src[j]) {
		return 0, 0, false
	}
	return n, j, true
}

// keyword acts on a reserved word (or a word that only looks like one) that
// ends at end.
func (s *scanner) keyword(w string, end int) bool {
	open, closeOK, keep := s.openOK, s.closeOK, s.keepOpen
	s.i = end
	s.openOK, s.closeOK, s.keepOpen = false, false, false
	pop := func(f frame) bool {
		if closeOK && s.top() == f {
			s.sp--
			s.openOK, s.closeOK = true, true
			return true
		}
		return false
	}
	switch w {
	case "if":
		if open {
			s.openOK = true
			return s.push(fIf)
		}
	case "while", "until", "for", "select":
		if open {
			s.openOK = true
			return s.push(fLoop)
		}
	case "case":
		if open {
			return s.push(fCase)
		}
	case "{":
		if open || keep {
			s.openOK = true
			return s.push(fBrace)
		}
	case "[[":
		if open {
			return s.push(fTest)
		}
	case "then", "do", "else", "elif", "!", "time":
		s.openOK = open || closeOK
	case "in":
		s.openOK = true
		s.closeOK = s.top() == fCase
	case "let":
		s.let = open
	case "function", "coproc":
		s.openOK, s.keepOpen = open, open
	case "fi":
		pop(fIf)
	case "done":
		pop(fLoop)
	case "esac":
		pop(fCase)
	case "}":
		pop(fBrace)
	default:
		if keep {
			s.openOK = true // coproc NAME {, function NAME {
		}
	}
	return true
}

// heredoc records the delimiter of a here-document after its <<.
func (s *scanner) heredoc() bool {
	h := heredoc{}
	if s.peek(0) == '-' {
		h.tabs = true
		s.i++
	}
	for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
	h.start = s.i
	for s.i < len(s.src) {
		b := s.src[s.i]
		if isDelim(b) {
			break
		}
		switch b {
		case '\'', '"':
			h.quoted = true
			s.i++
			for s.i < len(s.src) && s.src[s.i] != b {
				s.i++
			}
		case '\\':
			h.quoted = true
			s.i++
		}
		s.i++
	}
	s.i = min(s.i, len(s.src))
	h.end = s.i
	if s.npending == maxPendingHeredocs {
		return false
	}
	s.pending[s.npending] = h
	s.npending++
	return true
}

// startBody starts the body of the first pending here-document, at s.i.
func (s *scanner) startBody() bool {
	s.hdoc = s.pending[0]
	copy(s.pending[:], s.pending[1:s.npending])
	s.npending--
	s.body = s.i
	if s.hdoc.quoted {
		for s.i < len(s.src) && !s.atDelimiter() {
			s.skipLine()
		}
		s.skipLine()
		if s.npending > 0 {
			return s.startBody()
		}
		return true
	}
	return s.push(fHdoc)
}

func (s *scanner) skipLine() {
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
	s.i++
	s.body = s.i
}

// atDelimiter reports whether the line at s.i is the current here-document's
// delimiter, its quotes removed.
func (s *scanner) atDelimiter() bool {
	j := s.i
	if s.hdoc.tabs {
		for j < len(s.src) && s.src[j] == '\t' {
			j++
		}
	}
	d := s.src[s.hdoc.start:s.hdoc.end]
	for k := 0; k < len(d); k++ {
		c := d[k]
		if c == '\'' || c == '"' {
			continue
		}
		if c == '\\' && k+1 < len(d) {
			k++
			c = d[k]
		}
		if j >= len(s.src) || s.src[j] != c {
			return false
		}
		j++
	}
	return j == len(s.src) || s.src[j] == '\n'
}

// hdocBody reads one step of an unquoted here-document's body: expansions
// nest, the rest is literal.
func (s *scanner) hdocBody() bool {
	if s.i == s.body && s.atDelimiter() {
		s.sp-- // the body's frame
		s.skipLine()
		if s.npending > 0 {
			return s.startBody()
		}
		return true
	}
	switch s.src[s.i] {
	case '\\':
		s.i += 2
	case '$':
		return s.dollar()
	case '`':
		return s.backquote()
	case '\n':
		s.i++
		s.body = s.i
	default:
		s.i++
	}
	return true
}

// dq reads one step of a double-quoted string.
func (s *scanner) dq() bool {
	switch s.src[s.i] {
	case '\\':
		s.i += 2
	case '"':
		s.i++
		s.popTo(fDQ)
	case '$':
		return s.dollar()
	case '`':
		return s.backquote()
	default:
		s.i++
	}
	return true
}

// param reads one step of a ${...} expansion.
func (s *scanner) param() bool {
	switch s.src[s.i] {
	case '}':
		s.i++
		s.popTo(fParam)
	case '\'':
		s.skipSingle()
	case '"':
		s.i++
		return s.push(fDQ)
	case '\\':
		s.i += 2
	case '$':
		return s.dollar()
	case '`':
		return s.backquote()
	case '[':
		s.i++
		return s.push(fIndex)
	default:
		s.i++
	}
	return true
}

// arith reads one step of arithmetic: $(( )), (( )), a subscript. Every
// operator counts a level: the parser recurses on some, and no expression a
// person writes has hundreds.
func (s *scanner) arith() bool {
	b := s.src[s.i]
	switch b {
	case '\'':
		s.skipSingle()
	case '"':
		s.i++
		return s.push(fDQ)
	case '\\':
		s.i += 2
	case '$':
		return s.dollar()
	case '`':
		return s.backquote()
	case '(':
		s.i++
		return s.push(fAParen)
	case ')':
		s.i++
		if !s.popTo(fAParen) && s.top() == fArith && s.peek(0) == ')' {
			s.i++
			s.sp--
		}
	case ']':
		s.i++
		s.popTo(fIndex)
	case '\n', ';', '&', '|':
		// A subscript ends with its command at the latest (a[ is
		// often a glob): read on as a command.
		if s.top() == fIndex || s.top() == fArithOp && s.indexBelow() {
			if b == '\n' || b == ';' || (b == '&' || b == '|') && s.peek(1) == b {
				s.popTo(fIndex)
				return true
			}
		}
		if b != '\n' {
			s.i++
			return s.push(fArithOp)
		}
		s.i++
	case '!', '~', '-', '+', '=', '?', '*', '/', '%', '<', '>', '^', ':', ',':
		s.i++
		return s.push(fArithOp)
	default:
		s.i++
	}
	return true
}

// indexBelow reports whether the innermost frame under the operators is a
// subscript.
func (s *scanner) indexBelow() bool {
	for k := s.sp - 1; k >= 0; k-- {
		if s.stack[k] != fArithOp {
			return s.stack[k] == fIndex
		}
	}
	return false
}

// test reads one step of a [[ ... ]] expression.
func (s *scanner) test() bool {
	b := s.src[s.i]
	switch b {
	case '\'':
		s.skipSingle()
	case '"':
		s.i++
		return s.push(fDQ)
	case '\\':
		s.i += 2
	case '$':
		return s.dollar()
	case '`':
		return s.backquote()
	case '(':
		s.i++
		return s.push(fTParen)
	case ')':
		s.i++
		s.popTo(fTParen)
	case '!':
		s.i++
		return s.push(fTestOp)
	case '&', '|':
		s.i++
		if s.peek(0) == b {
			s.i++
			return s.push(fTestOp)
		}
	case ']':
		if s.peek(1) == ']' && isDelim(s.peek(2)) {
			s.adv(2)
			if s.popTo(fTest) {
				s.openOK, s.closeOK = false, false
			}
			return true
		}
		s.i++
	default:
		s.i++
	}
	return true
}
