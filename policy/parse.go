package policy

// The parse stage: a script is parsed by mvdan.cc/sh after the work bound
// (complexity.go) says the parser can take it; a script that does not parse
// is read up to its first syntax error, as sh reads and runs it.

import (
	"errors"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// parsers are reused, with their reader: a parser's buffers are most of the
// cost of a short check.
var parsers = sync.Pool{New: func() any {
	return &pooledParser{parser: syntax.NewParser(syntax.Variant(syntax.LangBash))}
}}

type pooledParser struct {
	parser *syntax.Parser
	reader strings.Reader
}

func parse(src string) (*syntax.File, error) {
	p := parsers.Get().(*pooledParser)
	defer parsers.Put(p)
	return p.parse(src)
}

// errTooComplex is parse's refusal of a script that could exhaust the
// parser (complexity.go).
var errTooComplex = errors.New("too complex to parse")

func (p *pooledParser) parse(src string) (*syntax.File, error) {
	if tooComplex(src) {
		return nil, errTooComplex
	}
	p.reader.Reset(src)
	return p.parser.Parse(&p.reader, "")
}

// parse is parse with c's parser. A parse ends before its tree is walked, so
// the scripts a script nests are parsed after it, not during.
func (c *checker) parse(src string) (*syntax.File, error) {
	if c.parser == nil {
		c.parser = parsers.Get().(*pooledParser) // kept: the checker holds it from now on
	}
	return c.parser.parse(src)
}

// parsePrefix parses the statements of src before its first syntax error,
// as sh reads and runs them one by one; nil if there are none.
func (c *checker) parsePrefix(src string) *syntax.File {
	if c.parser == nil {
		c.parser = parsers.Get().(*pooledParser)
	}
	p := c.parser
	p.reader.Reset(src)
	var stmts []*syntax.Stmt
	for st, err := range p.parser.StmtsSeq(&p.reader) {
		if err != nil {
			break
		}
		stmts = append(stmts, st)
	}
	if len(stmts) == 0 {
		return nil
	}
	return &syntax.File{Stmts: stmts}
}
