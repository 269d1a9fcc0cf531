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
