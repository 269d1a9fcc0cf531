package policy

import "strings"

// The shell parser recurses once for every construct a script nests, and
// on some chains of operators too (`! ! ! a` in `[[`, `1**1**1` in
// arithmetic, `time time a`). A Go stack may grow to a gigabyte, and past
// that the process dies: no recover runs, so the check's fail-closed guard
// (finish) cannot turn it into a refusal. The check's own walks recurse on
// the tree the same way, and on chains of && and ||. So a script is measured
// before it is parsed (tooComplex), in one pass over its bytes that
// allocates nothing, and one that nests deeper than maxNesting, or holds
// more than maxTokens words, operators and levels, is refused as too-complex
// unparsed. parse is the one place the parser is called, so the scripts a
// script holds (sh -c, eval, code variables) are measured too.
//
// What a level costs the parser (mvdan.cc/sh/v3 v3.14.1, the goroutine's
// stack after parsing 64 KiB of one construct, divided by the levels; the
// stack is a power of two, so each is within a factor of two): 5 KiB for
// $((, 2 to 4 KiB for ( in arithmetic, 3 KiB for "$(, 2.6 KiB for $(a=(,
// 2 KiB for a { group, 1.5 to 1.8 KiB for $(, a subshell, ${, <( or an if,
// 1 to 1.3 KiB for a loop, a case, [[ ( or [[ !, 0.6 KiB for && in [[ or
// a time, 0.13 to 0.26 KiB for an operator of arithmetic. The stack
// doubles as it grows and the old one is copied. Unbounded, 64 KiB of (
// took 134 MiB of stack and a second, 128 KiB of it 740 MB over HTTP, and
// about 900 KB of "$( overflowed the stack. At maxNesting the parser's
// stack is 4 MiB for $(( and 1 to 2 MiB for the rest. A flat script costs
// the parser 120 to 200 bytes a token (1 MiB of a| allocated 200 MB), so
// maxTokens bounds it to about 13 MB; a real script of 128 KiB (the doors'
// limit) has 27,000 tokens and allocates 5 MB, and the check's step budget
// (maxSteps) refuses a real one of 54,000 anyway.
//
// The scan reads the shell's quoting as the parser does: nothing nests in
// single quotes, a comment or a quoted here-document; in double quotes and
// unquoted here-documents only $(, ${, $((, $[ and backquotes do; a
// backslash before a backquote nests it one level per backslash in
// backquotes; a line continuation is dropped anywhere. It counts a level
// for every opener where the parser may open one, and drops one only for a
// closer of the innermost level it counted, where the parser takes it as a
// closer (fi, done, esac and } only where a command may end). Where it
// cannot tell it counts too many: a person's script comes nowhere near the
// bound. complexity_test.go holds the count to the depth of the parser's
// tree on the corpus and on random scripts of every construct. The check's
// walk of a left-deep chain (a && b && c, 1+2+3) may go twice as deep as
// the count: the chain's length, then its first operand.
const (
	maxNesting = 500
	maxTokens  = 1 << 16
	// minScanned: a shorter script is not scanned. Every level takes a byte
	// at least, so it nests 2,048 levels at most, which the parser takes in
	// 8 MiB of stack at worst (2,047 bytes of (); nearly every command is shorter,
	// so the scan costs them nothing (it reads a byte in about 55
	// instructions).
	minScanned = 2048
	// maxPendingHeredocs bounds the here-documents one line may start.
	maxPendingHeredocs = 16
)

// frame is what a level of nesting is, which decides how the text inside it
// is read (mode) and which closer ends it.
type frame uint8

const (
	fSub       frame = iota // ( in command position: a subshell, closed by )
	fParen                  // $( <( >(, closed by )
	fWordParen              // ( after a word: f() {, a=(, @(, closed by )
	fBrace                  // { ... } group, closed by } where a command may end
	fBack                   // ` ... `
	fBackDQ                 // ` ... ` in double quotes
	fBraceExp               // { ... } in a word: a brace expansion
	fIf                     // if ... fi
	fLoop                   // while, until, for, select ... done
	fCase                   // case ... esac
	fDQ                     // "..."
	fParam                  // ${ ... }
	fArith                  // $(( (( ... ))
	fAParen                 // ( inside arithmetic
	fIndex                  // a[ ... ] and $[ ... ]: arithmetic closed by ]
	fLet                    // let's arguments: arithmetic up to the command's end
	fBracket                // $[ ... ]: arithmetic closed by ]
	fTest                   // [[ ... ]]
	fTParen                 // ( inside [[ ]]
	fArithOp                // an operator of arithmetic: the parser may recurse on it
	fTestOp                 // ! && || inside [[ ]]
	fParamOp                // an operator in ${ }: ${a:!!1} is arithmetic
	fHdoc                   // the body of an unquoted here-document
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
	fSub: mCmd, fParen: mCmd, fWordParen: mCmd, fBrace: mCmd, fBack: mCmd, fBackDQ: mCmd, fBraceExp: mCmd, fIf: mCmd, fLoop: mCmd, fCase: mCmd,
	fDQ: mDQ, fParam: mParam, fArith: mArith, fAParen: mArith, fIndex: mArith, fLet: mArith, fBracket: mArith,
	fTest: mTest, fTParen: mTest, fArithOp: mArith, fTestOp: mTest, fParamOp: mParam, fHdoc: mHdoc,
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
	src   string
	i     int
	sp    int
	stack [maxNesting]frame
	// chain[k] counts the && and || of the list being read at level k,
	// chains all of them: levels too (link).
	chain  [maxNesting + 1]uint16
	chains int
	// linked: the last operator was && or ||, which a newline does not end.
	linked bool
	tokens int
	// openOK: a reserved word or { here may open a compound command (counted
	// generously); closeOK: a reserved word or } here may close one (strictly).
	openOK, closeOK bool
	// partEnd is where the last quoted or expanded part of a word ended: a #
	// there goes on with the word at the top level, and starts a comment
	// inside ( ), $( ), backquotes, an array or a case (the parser's way).
	partEnd int
	// fresh: a comment ended here, so a word starts.
	fresh bool
	// bq counts the backquotes open, bqDQ those in double quotes.
	bq, bqDQ int
	// assignOK: the next word may be an assignment (after a command's
	// start, an assignment, or declare and its kin: decl).
	assignOK, decl bool
	// keepOpen: the next word is a name after `function` or `coproc`, after
	// which a { still opens.
	keepOpen bool
	// body is the start of the current line of a here-document's body.
	body     int
	pending  [maxPendingHeredocs]heredoc
	npending int
	// hdoc is the here-document whose body is being read.
	hdoc heredoc
	// deepest is the most levels open at once, for the tests.
	deepest int
}

// tooComplex reports whether parsing src could nest deeper than maxNesting
// or build more than maxTokens words and operators.
func tooComplex(src string) bool {
	if len(src) < minScanned {
		return false
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
	if s.sp+s.chains >= maxNesting {
		return false
	}
	s.stack[s.sp] = f
	s.sp++
	switch f {
	case fBackDQ:
		s.bqDQ++
		fallthrough
	case fBack:
		s.bq++
	}
	s.tokens++ // every level is a node of the tree at least
	s.chain[s.sp] = 0
	s.deepest = max(s.deepest, s.sp+s.chains)
	return true
}

// pop closes the innermost level.
func (s *scanner) pop() {
	s.endChain()
	s.sp--
	switch s.stack[s.sp] {
	case fDQ, fParam, fParen, fArith, fIndex, fBracket:
		s.partEnd = s.i
	case fBackDQ:
		s.bqDQ--
		fallthrough
	case fBack:
		s.bq--
		s.partEnd = s.i
	}
}

// inSub reports whether a level open is one in which the parser takes a #
// after a word's part for a comment (partEnd).
func (s *scanner) inSub() bool {
	for k := 0; k < s.sp; k++ {
		switch s.stack[k] {
		case fSub, fParen, fWordParen, fBack, fBackDQ, fCase:
			return true
		}
	}
	return false
}

// link counts an && or || of the current list: the check walks such a
// chain by recursion, a level each.
func (s *scanner) link() bool {
	s.chain[s.sp]++
	s.chains++
	s.deepest = max(s.deepest, s.sp+s.chains)
	return s.sp+s.chains < maxNesting
}

// endChain ends the current list's chain of && and ||.
func (s *scanner) endChain() {
	s.chains -= int(s.chain[s.sp])
	s.chain[s.sp] = 0
}

func (s *scanner) top() frame {
	if s.sp == 0 {
		return 255
	}
	return s.stack[s.sp-1]
}

// popTo drops the operators above the innermost frame and pops it if it is f.
func (s *scanner) popTo(f frame) bool {
	for s.sp > 0 && (s.stack[s.sp-1] == fArithOp || s.stack[s.sp-1] == fTestOp || s.stack[s.sp-1] == fParamOp) {
		s.pop()
	}
	if s.top() == f {
		s.pop()
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
	s.partEnd = s.i
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
	s.partEnd = s.i
}

// dollar reads what a $ opens, in any mode but a single-quoted string.
func (s *scanner) dollar() bool { return s.dollarIn(false) }

// dollarIn is dollar in double quotes or a here-document's body (inDQ),
// where $' and $" are a $ and a quote.
func (s *scanner) dollarIn(inDQ bool) bool {
	switch c := s.peek(1); {
	case inDQ && (c == '\'' || c == '"'):
		s.i++
		return true
	}
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
		switch s.peek(0) {
		case ' ', '\t', '\n', '|':
			// ${ cmd; } and ${| cmd; }: a command substitution
			s.openOK, s.closeOK = true, false
			return s.push(fBrace)
		}
		return s.push(fParam)
	case '[':
		s.adv(2)
		return s.push(fBracket)
	case '"':
		s.adv(2)
		return s.push(fDQ)
	case '\'':
		s.skipANSI()
		return true
	}
	s.adv(1)
	if s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for s.i < len(s.src) && isNameByte(s.src[s.i]) {
				s.i++
			}
			s.partEnd = s.i
		case c >= '0' && c <= '9' || strings.IndexByte("@*#?$!-", c) >= 0:
			s.i++
			s.partEnd = s.i
		}
	}
	return true
}

// backquote opens or closes a `...` command substitution: a backquote with
// no backslash before it closes the innermost, if one is open.
func (s *scanner) backquote(inDQ bool) bool {
	s.i++
	if s.bq > 0 {
		s.closeBack()
		return true
	}
	return s.openBack(inDQ)
}

// closeBack closes the innermost backquote, and what is open within it:
// had that been open, the parser would refuse the script here.
func (s *scanner) closeBack() {
	for s.sp > 0 {
		f := s.stack[s.sp-1]
		s.pop()
		if f == fBack || f == fBackDQ {
			return
		}
	}
}

func (s *scanner) openBack(inDQ bool) bool {
	s.openOK, s.closeOK, s.fresh = true, false, true
	if inDQ {
		return s.push(fBackDQ)
	}
	return s.push(fBack)
}

// escape reads a run of backslashes and what follows it. Within backquotes
// the parser first drops a backslash a level before $, ` and \ (and " when
// the backquotes are in double quotes), so \` nests a backquote in a
// backquote, \\` in two; the backslashes left escape as they do outside.
func (s *scanner) escape(inDQ bool) bool {
	j := s.i
	for j < len(s.src) && s.src[j] == '\\' {
		j++
	}
	r := j - s.i
	var c byte
	if j < len(s.src) {
		c = s.src[j]
	}
	drop := 0
	if n := s.bq; n > 0 {
		drop = min(r-1, n)
		if drop < r && (c == '$' || c == '`' || c == '\\' || c == '"' && drop < s.bqDQ) {
			drop++
		}
	}
	s.i = j
	if (r-drop)%2 == 1 {
		s.i = min(j+1, len(s.src)) // c is escaped
		return true
	}
	if c == '`' && drop > 0 {
		s.i++
		if drop < s.bq {
			s.closeBack()
			return true
		}
		return s.openBack(inDQ)
	}
	return true // c is read as it is
}

// cmd reads one step of command text.
func (s *scanner) cmd() bool {
	b := s.src[s.i]
	switch b {
	case ' ', '\t':
		for s.i++; s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t'); s.i++ {
		}
		return true
	case '\n':
		s.i++
		s.tokens++
		s.openOK, s.closeOK = true, true
		s.decl, s.assignOK = false, false
		if s.npending > 0 {
			return s.startBody()
		}
		s.endLine()
		return true
	case ';', '&', '|':
		// One operator (; ;; ;& & && | || |&): a command may start after
		// any, and end after ; and a lone &.
		s.tokens++
		if b == '&' && s.peek(1) == '>' {
			s.adv(1) // &> and &>> redirect
			return true
		}
		s.openOK, s.closeOK = true, b == ';' || b == '&' && s.peek(1) != '&'
		next := s.peek(1)
		s.adv(1)
		for c := s.peek(0); c == ';' || c == '&' || c == '|'; c = s.peek(0) {
			s.adv(1)
		}
		s.decl, s.assignOK = false, false
		s.linked = b != ';' && next == b
		switch {
		case s.linked:
			return s.link() // && ||
		case s.closeOK:
			s.endChain() // ; ;; ;& &
		}
		return true
	case '<', '>':
		s.tokens++
		s.openOK, s.closeOK = false, false
		if s.peek(1) == '(' {
			s.adv(2)
			s.openOK = true
			return s.push(fParen)
		}
		if b == '<' && s.peek(1) == '<' {
			if s.peek(2) == '<' {
				s.adv(3) // a here-string
				return true
			}
			s.adv(2)
			return s.heredoc()
		}
		s.adv(1)
		for c := s.peek(0); c == '&' || c == '>' || c == '|'; c = s.peek(0) {
			s.adv(1) // >& <& >> >| and the like: one redirect
		}
		return true
	case '(':
		s.tokens++
		if s.peek(1) == '(' && s.openOK {
			s.adv(2)
			return s.push(fArith)
		}
		f := fWordParen
		if s.openOK {
			f = fSub
		}
		s.i++
		s.openOK, s.closeOK = true, false
		return s.push(f)
	case ')':
		s.tokens++
		s.i++
		s.closeSoft()
		switch {
		case s.popTo(fSub):
			s.openOK, s.closeOK = true, true
		case s.popTo(fParen):
			s.openOK, s.closeOK = false, false
		case s.popTo(fWordParen):
			s.openOK, s.closeOK = true, false // f() {
		case s.top() == fCase:
			s.openOK, s.closeOK = true, false // a pattern's ): its command follows
		default:
			s.openOK, s.closeOK = false, false
		}
		return true
	}
	prev := s.prev()
	wordStart := prev == 0 || isDelim(prev) && s.i != s.partEnd || s.fresh
	s.fresh = false
	if (wordStart || s.i == s.partEnd) && globOps[b] && s.peek(1) == '(' && s.peek(2) != ')' {
		s.extglob()
		return true
	}
	if b == '#' && (wordStart || s.i == s.partEnd && s.inSub()) {
		s.comment()
		return true
	}
	return s.word(wordStart)
}

// closeSoft pops, before a ) in command text, the levels it would close
// within the ( it closes: a { in a word, or a group or a compound command
// whose closer the scan did not see. Were they open, the parser would refuse
// the script at this ); a case is left, whose pattern the ) may end.
func (s *scanner) closeSoft() {
	k := s.sp - 1
	for k >= 0 {
		switch s.stack[k] {
		case fBraceExp, fBrace, fIf, fLoop:
			k--
			continue
		case fSub, fParen, fWordParen:
			for s.sp > k+1 {
				s.pop()
			}
		}
		return
	}
}

// extglob skips an extended glob, @(...) and its kin, which the parser
// reads as literal text up to the ) that balances its (.
func (s *scanner) extglob() {
	s.tokens++
	s.adv(2)
	for open := 1; s.i < len(s.src); s.adv(1) {
		switch s.src[s.i] {
		case '(':
			open++
		case ')':
			if open--; open == 0 {
				s.adv(1)
				s.partEnd = s.i
				return
			}
		}
	}
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
	start := s.i
	for s.i < len(s.src) && s.src[s.i] != '\n' && !(s.src[s.i] == '`' && s.bq > 0 && s.closesBack(start)) {
		s.i++
	}
	n := 0
	for n < s.i && s.src[s.i-1-n] == '\\' {
		n++
	}
	if s.i < len(s.src) && n%2 == 1 {
		// The comment ends with a line continuation, which the parser
		// drops with it: the next line goes on with the command.
		s.i++
		s.fresh = true
	}
}

// closesBack reports whether the backquote at s.i, in a comment that began
// at start, closes a backquote (escape).
func (s *scanner) closesBack(start int) bool {
	r := 0
	for s.i-r-1 >= start && s.src[s.i-r-1] == '\\' {
		r++
	}
	drop := min(r, s.bq)
	return (r-drop)%2 == 0 && drop < s.bq
}

// word reads one unquoted word, with its quoted and expanded parts up to the
// first that opens a level, in command text.
func (s *scanner) word(wordStart bool) bool {
	start := s.i
	name := false // the word so far is a name that may be assigned to
	if wordStart {
		s.tokens++
		name = (s.openOK || s.assignOK || s.decl) && !(s.src[s.i] >= '0' && s.src[s.i] <= '9')
		s.assignOK = false
		if s.openOK || s.closeOK || s.keepOpen {
			var buf [8]byte
			if n, end, ok := s.reserved(&buf); ok {
				return s.keyword(string(buf[:n]), end)
			}
		}
	}
	keep := s.keepOpen
	s.openOK, s.closeOK, s.keepOpen, s.linked = keep, false, false, false
	for s.i < len(s.src) {
		if !name {
			s.skipTo(wordSpecial)
			if s.i == len(s.src) {
				break
			}
		}
		b := s.src[s.i]
		if name && !isNameByte(b) {
			// name= and name+= assign, name[ is a subscript (arithmetic),
			// and the next word may assign too; the parser reads name[
			// anywhere else as a glob.
			name = false
			switch {
			case s.i == start:
			case b == '=' || b == '+' && s.peek(1) == '=':
				s.assignOK = true
			case b == '[':
				s.assignOK = true
				s.i++
				return s.push(fIndex)
			}
		}
		switch b {
		case '\'':
			s.skipSingle()
			continue
		case '"':
			s.i++
			return s.push(fDQ)
		case '\\':
			if s.bq > 0 {
				return s.escape(false)
			}
			s.i += 2
			continue
		case '$':
			return s.dollar()
		case '`':
			return s.backquote(false)
		case '#':
			if s.i == s.partEnd && s.inSub() {
				s.comment()
				return true
			}
		case '{':
			// The check expands braces by recursion, and builds each
			// one.
			s.i++
			if !s.push(fBraceExp) {
				return false
			}
			continue
		case '}':
			s.i++
			s.popTo(fBraceExp)
			continue
		}
		if isDelim(b) {
			return true
		}
		s.i++
	}
	return true
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
	if n == 0 || j < len(s.src) && !isDelim(s.src[j]) && !(s.src[j] == '`' && s.bq > 0) {
		return 0, 0, false
	}
	return n, j, true
}

// keyword acts on a reserved word (or a word that only looks like one) that
// ends at end.
func (s *scanner) keyword(w string, end int) bool {
	open, closeOK, keep := s.openOK, s.closeOK, s.keepOpen
	s.i = end
	s.openOK, s.closeOK, s.keepOpen, s.linked = false, false, false, false
	pop := func(f frame) bool {
		if closeOK && s.top() == f {
			s.pop()
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
	case "then", "do", "else", "elif":
		s.openOK = open || closeOK
	case "!", "time":
		// The parser recurses on each time of time time ... a.
		s.openOK = open || closeOK
		if open {
			return s.link()
		}
	case "in":
		s.openOK = true
		s.closeOK = s.top() == fCase
	case "let":
		if open {
			return s.push(fLet)
		}
	case "declare", "local", "export", "readonly", "typeset", "nameref":
		s.decl = open
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
		case '$', '`':
			// The parser refuses an expansion in a delimiter, but
			// only once it has read it: read it as a word.
			s.i = h.start
			return true
		case '\'', '"':
			h.quoted = true
			if b == '"' {
				s.deepest = max(s.deepest, s.sp+s.chains+1)
			}
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
		s.endLine()
		return true
	}
	return s.push(fHdoc)
}

// endLine ends the chain of && and || at a line's end (after its
// here-documents, which the parser reads within the line's statement),
// unless the line ends with one.
func (s *scanner) endLine() {
	if !s.linked {
		s.endChain()
	}
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
		s.pop() // the body's frame
		s.skipLine()
		s.openOK, s.closeOK, s.fresh = true, true, true // the line after it starts a command
		if s.npending > 0 {
			return s.startBody()
		}
		s.endLine()
		return true
	}
	if s.skipTo(hdocSpecial) {
		return true
	}
	switch s.src[s.i] {
	case '\\':
		return s.escape(true)
	case '$':
		return s.dollarIn(true)
	case '`':
		return s.backquote(true)
	case '\n':
		s.i++
		s.body = s.i
	default:
		s.i++
	}
	return true
}

// The bytes each mode acts on; the others it steps over in a loop.
var (
	dqSpecial    = newByteSet("\\\"$`")
	hdocSpecial  = newByteSet("\\$`\n")
	paramSpecial = newByteSet("}'\"\\$`[!~-+=?*/%<>^:,&|")
	testSpecial  = newByteSet("'\"\\$`()!&|]")
	// wordSpecial: what ends an unquoted word or acts in it.
	wordSpecial = newByteSet(" \t\n;&|()<>'\"\\$`{}#\x00")
	globOps     = newByteSet("?*+@!")
)

// skipTo steps over the bytes that are not in set, and reports whether it
// reached the end.
func (s *scanner) skipTo(set *byteSet) bool {
	for s.i < len(s.src) && !set[s.src[s.i]] {
		s.i++
	}
	return s.i == len(s.src)
}

// dq reads one step of a double-quoted string.
func (s *scanner) dq() bool {
	if s.skipTo(dqSpecial) {
		return true
	}
	switch s.src[s.i] {
	case '\\':
		return s.escape(true)
	case '"':
		s.i++
		s.popTo(fDQ)
	case '$':
		return s.dollarIn(true)
	case '`':
		return s.backquote(true)
	default:
		s.i++
	}
	return true
}

// param reads one step of a ${...} expansion.
func (s *scanner) param() bool {
	if s.skipTo(paramSpecial) {
		return true
	}
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
		return s.escape(false)
	case '$':
		return s.dollar()
	case '`':
		return s.backquote(false)
	case '[':
		s.i++
		return s.push(fIndex)
	case '!', '~', '-', '+', '=', '?', '*', '/', '%', '<', '>', '^', ':', ',', '&', '|':
		s.i++
		return s.push(fParamOp)
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
		return s.escape(false)
	case '$':
		return s.dollar()
	case '`':
		return s.backquote(false)
	case '(':
		s.i++
		return s.push(fAParen)
	case '[':
		s.i++
		return s.push(fIndex)
	case ')':
		s.i++
		if !s.popTo(fAParen) && s.top() == fArith && s.peek(0) == ')' {
			s.i++
			s.pop()
		}
	case ']':
		s.i++
		if !s.popTo(fIndex) {
			s.popTo(fBracket)
		}
	case '\n', ';', '&', '|':
		// A subscript ends with its command at the latest (a[ is
		// often a glob): read on as a command.
		switch s.arithBelow() {
		case fIndex:
			if b == '\n' || b == ';' || (b == '&' || b == '|') && s.peek(1) == b {
				s.popTo(fIndex)
				return true
			}
		case fLet:
			if b == '\n' || b == ';' {
				s.popTo(fLet)
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

// arithBelow returns the innermost frame under the operators.
func (s *scanner) arithBelow() frame {
	for k := s.sp - 1; k >= 0; k-- {
		if s.stack[k] != fArithOp {
			return s.stack[k]
		}
	}
	return 255
}

// test reads one step of a [[ ... ]] expression.
func (s *scanner) test() bool {
	if s.skipTo(testSpecial) {
		return true
	}
	b := s.src[s.i]
	switch b {
	case '\'':
		s.skipSingle()
	case '"':
		s.i++
		return s.push(fDQ)
	case '\\':
		return s.escape(false)
	case '$':
		return s.dollar()
	case '`':
		return s.backquote(false)
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
