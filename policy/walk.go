package policy

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// A visitor is what a walk does at the nodes of a syntax tree.
type visitor interface {
	// enter is called at each node before its children; false skips them, and
	// the leave after them.
	enter(n syntax.Node) bool
	// leave is called after the children of a node that enter let through.
	leave()
}

// walk visits the tree under n depth first, in syntax.Walk's order: enter
// and leave are where syntax.Walk calls f(node) and the closing f(nil). It is
// a plain recursion over the node types, because syntax.Walk pays a closure
// call, a deferred-call frame and a closing call at every node, which was a
// large part of a check (docs/policy.md, Speed). The parser keeps no
// comments, so there are none to visit.
func walk(n syntax.Node, v visitor) {
	if !v.enter(n) {
		return
	}
	switch n := n.(type) {
	case *syntax.File:
		walkList(n.Stmts, v)
	case *syntax.Stmt:
		if n.Cmd != nil {
			walk(n.Cmd, v)
		}
		walkList(n.Redirs, v)
	case *syntax.Assign:
		if n.Name != nil {
			walk(n.Name, v)
		}
		if n.Value != nil {
			walk(n.Value, v)
		}
		if n.Index != nil {
			walk(n.Index, v)
		}
		if n.Array != nil {
			walk(n.Array, v)
		}
	case *syntax.Redirect:
		if n.N != nil {
			walk(n.N, v)
		}
		walk(n.Word, v)
		if n.Hdoc != nil {
			walk(n.Hdoc, v)
		}
	case *syntax.CallExpr:
		walkList(n.Assigns, v)
		walkList(n.Args, v)
	case *syntax.Subshell:
		walkList(n.Stmts, v)
	case *syntax.Block:
		walkList(n.Stmts, v)
	case *syntax.IfClause:
		walkList(n.Cond, v)
		walkList(n.Then, v)
		if n.Else != nil {
			walk(n.Else, v)
		}
	case *syntax.WhileClause:
		walkList(n.Cond, v)
		walkList(n.Do, v)
	case *syntax.ForClause:
		walk(n.Loop, v)
		walkList(n.Do, v)
	case *syntax.WordIter:
		walk(n.Name, v)
		walkList(n.Items, v)
	case *syntax.CStyleLoop:
		if n.Init != nil {
			walk(n.Init, v)
		}
		if n.Cond != nil {
			walk(n.Cond, v)
		}
		if n.Post != nil {
			walk(n.Post, v)
		}
	case *syntax.BinaryCmd:
		walk(n.X, v)
		walk(n.Y, v)
	case *syntax.FuncDecl:
		if n.Name != nil {
			walk(n.Name, v)
		}
		walkList(n.Names, v)
		walk(n.Body, v)
	case *syntax.Word:
		walkList(n.Parts, v)
	case *syntax.Lit, *syntax.SglQuoted:
	case *syntax.DblQuoted:
		walkList(n.Parts, v)
	case *syntax.CmdSubst:
		walkList(n.Stmts, v)
	case *syntax.ParamExp:
		walkParamExp(n, v)
	case *syntax.ArithmExp:
		walk(n.X, v)
	case *syntax.ArithmCmd:
		walk(n.X, v)
	case *syntax.BinaryArithm:
		walk(n.X, v)
		walk(n.Y, v)
	case *syntax.BinaryTest:
		walk(n.X, v)
		walk(n.Y, v)
	case *syntax.UnaryArithm:
		walk(n.X, v)
	case *syntax.UnaryTest:
		walk(n.X, v)
	case *syntax.ParenArithm:
		walk(n.X, v)
	case *syntax.FlagsArithm:
		walk(n.Flags, v)
		if n.X != nil {
			walk(n.X, v)
		}
	case *syntax.ParenTest:
		walk(n.X, v)
	case *syntax.CaseClause:
		walk(n.Word, v)
		walkList(n.Items, v)
	case *syntax.CaseItem:
		walkList(n.Patterns, v)
		walkList(n.Stmts, v)
	case *syntax.TestClause:
		walk(n.X, v)
	case *syntax.DeclClause:
		walkList(n.Args, v)
	case *syntax.ArrayExpr:
		walkList(n.Elems, v)
	case *syntax.ArrayElem:
		if n.Index != nil {
			walk(n.Index, v)
		}
		if n.Value != nil {
			walk(n.Value, v)
		}
	case *syntax.ExtGlob:
		walk(n.Pattern, v)
	case *syntax.ProcSubst:
		walkList(n.Stmts, v)
	case *syntax.TimeClause:
		if n.Stmt != nil {
			walk(n.Stmt, v)
		}
	case *syntax.CoprocClause:
		if n.Name != nil {
			walk(n.Name, v)
		}
		walk(n.Stmt, v)
	case *syntax.LetClause:
		walkList(n.Exprs, v)
	case *syntax.TestDecl:
		walk(n.Description, v)
		walk(n.Body, v)
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	v.leave()
}

func walkParamExp(n *syntax.ParamExp, v visitor) {
	if n.Flags != nil {
		walk(n.Flags, v)
	}
	if n.Param != nil {
		walk(n.Param, v)
	}
	if n.NestedParam != nil {
		walk(n.NestedParam, v)
	}
	if n.Index != nil {
		walk(n.Index, v)
	}
	if n.Slice != nil {
		if n.Slice.Offset != nil {
			walk(n.Slice.Offset, v)
		}
		if n.Slice.Length != nil {
			walk(n.Slice.Length, v)
		}
	}
	if n.Repl != nil {
		if n.Repl.Orig != nil {
			walk(n.Repl.Orig, v)
		}
		if n.Repl.With != nil {
			walk(n.Repl.With, v)
		}
	}
	if n.Exp != nil && n.Exp.Word != nil {
		walk(n.Exp.Word, v)
	}
}

func walkList[N syntax.Node](list []N, v visitor) {
	for _, n := range list {
		walk(n, v)
	}
}

// treeWalk is walk specialised for the two walks of every script, collect's
// and the judging one, which were most of the time a check spends beyond the
// parse (docs/policy.md, Speed). It visits the same nodes in the same order
// as walk with the collector or judge visitor, counting the same steps at the
// same points and stopping where they stop, but as a recursion over concrete
// types: no call through the visitor interface at every node and its end, no
// conversion of each child from its own interface (Command, WordPart, ...) to
// syntax.Node, and a node without anything to collect or judge costs only
// its steps.
type treeWalk struct {
	c       *checker
	src     string
	collect bool // collect's walk (collectNode); otherwise the judging walk (redirects, call, judgeBinary, ...)
	ws      walkState
	depth   int
	// Collect's walk tells fork bombs while it goes through function bodies
	// (see bodies): open are the functions whose bodies it is in, forks the
	// forks it is in (pipeline stages, background statements), and quiet the
	// redirects of background statements it is in, whose calls the fork-bomb
	// test does not count. forks and quiet count only inside a body.
	open  []openFunc
	forks int
	quiet int
	// Collect's walk also records the judging walk's actions (events):
	// walked counts the walk's own steps (not those of its actions), and mark
	// is walked where the last event's entry step was taken.
	walked int
	mark   int
}

// openFunc is a function whose body collect's walk is in, and what the walk
// has seen of its calls there: a fork bomb calls itself in a fork (a pipeline
// or the background) or more than once.
type openFunc struct {
	name         string
	forks, quiet int // the walk's forks and quiet where the body starts
	calls        int
	forkedCall   bool
}

// enterPlain is what both visitors do on entering a node that neither acts
// on: collect counts a step, the judging walk counts one unless it is done,
// and both look inside unless the check is done.
func (w *treeWalk) enterPlain() bool {
	c := w.c
	if !w.collect && c.done() {
		return false
	}
	c.step()
	w.walked++
	return !c.done()
}

// enterWord is both visitors' entry of a word: a step, and a look inside
// only if it may hold commands.
func (w *treeWalk) enterWord(x *syntax.Word) bool {
	c := w.c
	if !w.collect && c.done() {
		return false
	}
	c.step()
	w.walked++
	return mayHoldCommands(x)
}

// enterCollect enters a node that only collect acts on.
func (w *treeWalk) enterCollect(n syntax.Node) bool {
	if w.collect {
		w.walked++ // collectNode's step
		return w.c.collectNode(w.src, n)
	}
	return w.enterPlain()
}

// enterJudge is the judging walk's entry of a node it acts on: nothing once
// the check is done, else a step, before the node's action (the node is
// then looked inside unless the action ended the check). Collect enters the
// node as any other.
func (w *treeWalk) enterJudge() bool {
	c := w.c
	if c.done() {
		return false
	}
	c.step()
	return true
}

// leave is both visitors' leave: collect counts a step, the judging walk
// counts one unless it is done.
func (w *treeWalk) leave() {
	if w.collect || !w.c.done() {
		w.c.step()
		w.walked++
	}
}

func (w *treeWalk) file(n *syntax.File) {
	if !w.enterPlain() {
		return
	}
	w.stmts(n.Stmts)
	w.leave()
}

func (w *treeWalk) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		w.stmt(s)
	}
}

func (w *treeWalk) stmt(n *syntax.Stmt) {
	if w.collect {
		if len(n.Redirs) > 0 {
			w.event(n) // without redirects, the judging walk's entry is a plain step
		}
		if !w.enterPlain() {
			return
		}
	} else {
		if !w.enterJudge() {
			return
		}
		if len(n.Redirs) > 0 {
			if w.c.redirects(w.src, n, &w.ws); w.c.done() {
				return
			}
		}
	}
	// In a function body, a background statement's command runs in a fork, and
	// the calls of its redirects are not counted (see bodies).
	background := n.Background && len(w.open) > 0
	if background {
		w.forks++
	}
	if n.Cmd != nil {
		w.command(n.Cmd)
	}
	if background {
		w.forks--
		w.quiet++
	}
	for _, r := range n.Redirs {
		w.redirect(r)
	}
	if background {
		w.quiet--
	}
	w.leave()
}

func (w *treeWalk) redirect(n *syntax.Redirect) {
	if !w.enterPlain() {
		return
	}
	if n.N != nil {
		w.lit(n.N)
	}
	w.word(n.Word)
	if n.Hdoc != nil {
		w.word(n.Hdoc)
	}
	w.leave()
}

func (w *treeWalk) assign(n *syntax.Assign) {
	if !w.enterCollect(n) {
		return
	}
	if n.Name != nil {
		w.lit(n.Name)
	}
	if n.Value != nil {
		w.word(n.Value)
	}
	if n.Index != nil {
		w.arithm(n.Index)
	}
	if n.Array != nil {
		w.arrayExpr(n.Array)
	}
	w.leave()
}

func (w *treeWalk) command(n syntax.Command) {
	switch n := n.(type) {
	case *syntax.CallExpr:
		if w.collect {
			if len(w.open) > 0 {
				w.countCall(n)
			}
			w.event(n)
			w.walked++ // collectCall's step
			if !w.c.collectCall(w.src, n) {
				return
			}
		} else {
			if !w.enterJudge() {
				return
			}
			if w.c.call(w.src, n, w.ws.ctx(n), w.depth); w.c.done() {
				return
			}
		}
		for _, a := range n.Assigns {
			w.assign(a)
		}
		w.words(n.Args)
	case *syntax.Subshell:
		if !w.enterPlain() {
			return
		}
		w.stmts(n.Stmts)
	case *syntax.Block:
		if !w.enterPlain() {
			return
		}
		w.stmts(n.Stmts)
	case *syntax.IfClause:
		w.ifClause(n)
		return
	case *syntax.WhileClause:
		if !w.enterPlain() {
			return
		}
		w.stmts(n.Cond)
		w.stmts(n.Do)
	case *syntax.ForClause:
		if !w.enterCollect(n) {
			return
		}
		w.loop(n.Loop)
		w.stmts(n.Do)
	case *syntax.BinaryCmd:
		if w.collect {
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				w.event(n) // judgeBinary acts on pipelines only: the entry of the others is a plain step
			}
			if !w.enterPlain() {
				return
			}
		} else {
			if !w.enterJudge() {
				return
			}
			if w.c.judgeBinary(w.src, n, &w.ws); w.c.done() {
				return
			}
		}
		// In a function body, a pipeline's stages run in forks.
		piped := (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && len(w.open) > 0
		if piped {
			w.forks++
		}
		w.stmt(n.X)
		w.stmt(n.Y)
		if piped {
			w.forks--
		}
	case *syntax.FuncDecl:
		if !w.enterCollect(n) {
			return
		}
		if n.Name != nil {
			w.lit(n.Name)
		}
		for _, l := range n.Names {
			w.lit(l)
		}
		w.body(n)
	case *syntax.ArithmCmd:
		if w.collect {
			w.event(n)
			if !w.enterPlain() {
				return
			}
		} else {
			if !w.enterJudge() {
				return
			}
			if w.c.judgeArithm(n, w.depth); w.c.done() {
				return
			}
		}
		w.arithm(n.X)
	case *syntax.CaseClause:
		if !w.enterPlain() {
			return
		}
		w.word(n.Word)
		for _, it := range n.Items {
			w.caseItem(it)
		}
	case *syntax.TestClause:
		if !w.enterPlain() {
			return
		}
		w.test(n.X)
	case *syntax.DeclClause:
		if w.collect {
			w.event(n)
			if !w.enterPlain() {
				return
			}
		} else {
			if !w.enterJudge() {
				return
			}
			if w.c.judgeDecl(n, w.depth); w.c.done() {
				return
			}
		}
		for _, a := range n.Args {
			w.assign(a)
		}
	case *syntax.LetClause:
		if w.collect {
			w.event(n)
			if !w.enterPlain() {
				return
			}
		} else {
			if !w.enterJudge() {
				return
			}
			if w.c.judgeLet(w.src, n, w.depth); w.c.done() {
				return
			}
		}
		for _, x := range n.Exprs {
			w.arithm(x)
		}
	case *syntax.TimeClause:
		if !w.enterPlain() {
			return
		}
		if n.Stmt != nil {
			w.stmt(n.Stmt)
		}
	case *syntax.CoprocClause:
		if !w.enterPlain() {
			return
		}
		if n.Name != nil {
			w.word(n.Name)
		}
		w.stmt(n.Stmt)
	case *syntax.TestDecl:
		if !w.enterPlain() {
			return
		}
		w.word(n.Description)
		w.stmt(n.Body)
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	w.leave()
}

// A judgeEvent is where the judging walk of a script acts (at a statement
// with redirects, a simple command, a pipeline, a declaration, a let or an
// arithmetic command; at
// any other node it only steps), recorded by
// collect's walk of the script with the walk's own steps before it; a nil
// node ends the record, with the steps after the last action.
//
// Collect's walk goes through the same nodes, in the same order, with its
// steps at the same points as the judging walk's (they are one treeWalk),
// and which nodes the judging walk enters depends only on the tree, until the
// check is done, which ends the judging walk: so the judging walk of a
// script collect walked through is its actions, in this order, with these
// steps between them, cut where the check is done (replay).
type judgeEvent struct {
	steps int
	node  syntax.Node
	// inBody: the node is in a function's body (which the judging walk
	// judges outside any call of it, with no arguments bound).
	inBody bool
}

// event records the judging walk's action at n, and the walk's steps since
// the last; the step of n's own entry, which follows at once, is the
// judging walk's, taken by replay.
func (w *treeWalk) event(n syntax.Node) {
	w.c.events = append(w.c.events, judgeEvent{steps: w.walked - w.mark, node: n, inBody: len(w.open) > 0})
	w.mark = w.walked + 1
}

// endEvents ends the record of collect's walk.
func (w *treeWalk) endEvents() {
	w.c.events = append(w.c.events, judgeEvent{steps: w.walked - w.mark})
}

// replay is the judging walk of a script whose events collect recorded from
// start on: for each, the walk's steps before it (as the walk takes them
// unless the check is done; a check done by one of them is done for the
// rest), then, unless the check is done, the entry step of the event's node
// and its action, as enterJudge and the judging branches of treeWalk do.
func (c *checker) replay(src string, start, depth int) {
	ws := c.takeWalkState()
	for i := start; ; i++ {
		ev := c.events[i] // by index: the actions' nested scripts append to events
		if ev.steps > 0 {
			if c.done() {
				break
			}
			c.steps += ev.steps
		}
		if ev.node == nil || c.done() {
			break
		}
		c.step()
		c.inBody = ev.inBody
		switch n := ev.node.(type) {
		case *syntax.Stmt:
			c.redirects(src, n, &ws)
		case *syntax.CallExpr:
			c.call(src, n, ws.ctx(n), depth)
		case *syntax.BinaryCmd:
			c.judgeBinary(src, n, &ws)
		case *syntax.DeclClause:
			c.judgeDecl(n, depth)
		case *syntax.LetClause:
			c.judgeLet(src, n, depth)
		case *syntax.ArithmCmd:
			c.judgeArithm(n, depth)
		default:
			panic(fmt.Sprintf("replay: unexpected node type %T", n))
		}
		c.inBody = false
	}
	c.putWalkState(ws)
}

// body walks a function's body. Collect's walk also tells whether the
// function is a fork bomb: the walk of spawnsItself, which looked at every
// call in the body once more, at the same calls, with the same forks
// (fastpath_test.go holds it to that walk): a background statement's command
// and a pipeline's stages run in forks, and the calls in a background
// statement's redirects are not counted. (spawnsItself walked a pipeline's
// stage as the root of a fork, where being in the background adds nothing;
// the parser makes no stage that is.) Past the step budget the walk stops
// and the test is left unfinished, as nothing is judged then.
func (w *treeWalk) body(n *syntax.FuncDecl) {
	if !w.collect {
		// The body, judged outside any call of it (replay's judgeEvent.inBody).
		in := w.c.inBody
		w.c.inBody = true
		w.stmt(n.Body)
		w.c.inBody = in
		return
	}
	if n.Name == nil {
		w.stmt(n.Body)
		return
	}
	w.open = append(w.open, openFunc{name: n.Name.Value, forks: w.forks, quiet: w.quiet})
	w.stmt(n.Body)
	f := w.open[len(w.open)-1]
	w.open = w.open[:len(w.open)-1]
	if f.forkedCall || f.calls >= 2 {
		w.c.bombs[f.name] = true
	}
}

// countCall counts call for the functions whose bodies the walk is in, if
// it calls one of them.
func (w *treeWalk) countCall(call *syntax.CallExpr) {
	if len(call.Args) == 0 {
		return
	}
	name := wordLit(call.Args[0])
	for i := range w.open {
		if f := &w.open[i]; f.name == name && f.quiet == w.quiet {
			f.calls++
			f.forkedCall = f.forkedCall || w.forks > f.forks
		}
	}
}

func (w *treeWalk) ifClause(n *syntax.IfClause) {
	if !w.enterPlain() {
		return
	}
	w.stmts(n.Cond)
	w.stmts(n.Then)
	if n.Else != nil {
		w.ifClause(n.Else)
	}
	w.leave()
}

func (w *treeWalk) caseItem(n *syntax.CaseItem) {
	if !w.enterPlain() {
		return
	}
	w.words(n.Patterns)
	w.stmts(n.Stmts)
	w.leave()
}

func (w *treeWalk) loop(n syntax.Loop) {
	switch n := n.(type) {
	case *syntax.WordIter:
		if !w.enterPlain() {
			return
		}
		w.lit(n.Name)
		w.words(n.Items)
	case *syntax.CStyleLoop:
		if !w.enterPlain() {
			return
		}
		if n.Init != nil {
			w.arithm(n.Init)
		}
		if n.Cond != nil {
			w.arithm(n.Cond)
		}
		if n.Post != nil {
			w.arithm(n.Post)
		}
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	w.leave()
}

// words walks a list of words. A word of one literal, most words, is
// stepped over here without the calls of word: it holds no commands, so its
// walk is its entry's step (enterWord, then no look inside).
func (w *treeWalk) words(list []*syntax.Word) {
	for _, x := range list {
		if isLitWord(x) {
			w.leave() // the same step: counted by collect, and by the judging walk unless it is done
			continue
		}
		w.word(x)
	}
}

// isLitWord reports whether w is one literal part; such a word never may hold
// commands (mayHoldCommands).
func isLitWord(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	_, ok := w.Parts[0].(*syntax.Lit)
	return ok
}

func (w *treeWalk) word(n *syntax.Word) {
	if !w.enterWord(n) {
		return
	}
	w.wordParts(n.Parts)
	w.leave()
}

// lit is a leaf: its entry, and its leave if the entry lets it through.
func (w *treeWalk) lit(*syntax.Lit) {
	if w.enterPlain() {
		w.leave()
	}
}

func (w *treeWalk) wordParts(list []syntax.WordPart) {
	for _, p := range list {
		w.wordPart(p)
	}
}

func (w *treeWalk) wordPart(n syntax.WordPart) {
	switch n := n.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
		if !w.enterPlain() {
			return
		}
	case *syntax.DblQuoted:
		if !w.enterPlain() {
			return
		}
		w.wordParts(n.Parts)
	case *syntax.CmdSubst:
		if !w.enterPlain() {
			return
		}
		w.stmts(n.Stmts)
	case *syntax.ParamExp:
		w.paramExp(n)
		return
	case *syntax.ArithmExp:
		if !w.enterPlain() {
			return
		}
		w.arithm(n.X)
	case *syntax.ExtGlob:
		if !w.enterPlain() {
			return
		}
		w.lit(n.Pattern)
	case *syntax.ProcSubst:
		if w.collect && n.Op == syntax.CmdOut {
			w.c.outSubsts = true // call looks for the commands that read it
		}
		if !w.enterPlain() {
			return
		}
		w.stmts(n.Stmts)
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	w.leave()
}

func (w *treeWalk) paramExp(n *syntax.ParamExp) {
	if !w.enterCollect(n) {
		return
	}
	if n.Flags != nil {
		w.lit(n.Flags)
	}
	if n.Param != nil {
		w.lit(n.Param)
	}
	if n.NestedParam != nil {
		w.wordPart(n.NestedParam)
	}
	if n.Index != nil {
		w.arithm(n.Index)
	}
	if n.Slice != nil {
		if n.Slice.Offset != nil {
			w.arithm(n.Slice.Offset)
		}
		if n.Slice.Length != nil {
			w.arithm(n.Slice.Length)
		}
	}
	if n.Repl != nil {
		if n.Repl.Orig != nil {
			w.word(n.Repl.Orig)
		}
		if n.Repl.With != nil {
			w.word(n.Repl.With)
		}
	}
	if n.Exp != nil && n.Exp.Word != nil {
		w.word(n.Exp.Word)
	}
	w.leave()
}

func (w *treeWalk) arithm(n syntax.ArithmExpr) {
	switch n := n.(type) {
	case *syntax.Word:
		w.word(n)
		return
	case *syntax.BinaryArithm:
		if !w.enterPlain() {
			return
		}
		w.arithm(n.X)
		w.arithm(n.Y)
	case *syntax.UnaryArithm:
		if !w.enterPlain() {
			return
		}
		w.arithm(n.X)
	case *syntax.ParenArithm:
		if !w.enterPlain() {
			return
		}
		w.arithm(n.X)
	case *syntax.FlagsArithm:
		if !w.enterPlain() {
			return
		}
		w.lit(n.Flags)
		if n.X != nil {
			w.arithm(n.X)
		}
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	w.leave()
}

func (w *treeWalk) test(n syntax.TestExpr) {
	switch n := n.(type) {
	case *syntax.Word:
		w.word(n)
		return
	case *syntax.BinaryTest:
		if !w.enterPlain() {
			return
		}
		w.test(n.X)
		w.test(n.Y)
	case *syntax.UnaryTest:
		if !w.enterPlain() {
			return
		}
		w.test(n.X)
	case *syntax.ParenTest:
		if !w.enterPlain() {
			return
		}
		w.test(n.X)
	default:
		panic(fmt.Sprintf("walk: unexpected node type %T", n))
	}
	w.leave()
}

func (w *treeWalk) arrayExpr(n *syntax.ArrayExpr) {
	if !w.enterPlain() {
		return
	}
	for _, el := range n.Elems {
		if !w.enterPlain() {
			continue
		}
		if el.Index != nil {
			w.arithm(el.Index)
		}
		if el.Value != nil {
			w.word(el.Value)
		}
		w.leave()
	}
	w.leave()
}
