package policy

// Literal text followed within one command line (issue 37): text a
// command writes to a file, a file descriptor or a pipe, or passes through
// a pure decoder, is judged where a later word of the same command line
// runs it (sh FILE, sh <&3, make, git's hooks).

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxFollowed bounds the text the checker keeps of what a script writes:
// past it, a file's text is not known.
const maxFollowed = 64 << 10

// literalText is what a simple command writes to its stdout when it is a
// literal: echo or printf of static words, or a filter (cat, base64 -d,
// rev, tr...) of text that is known (in, or the command's here-string or
// here-document).
func (c *checker) literalText(src string, st *syntax.Stmt, in string, inKnown bool) (string, bool) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || !mayWriteLiteral(call) {
		return "", false
	}
	alts := c.callArgs(src, call, true)
	if len(alts) != 1 || len(alts[0]) == 0 {
		return "", false
	}
	argv := alts[0]
	var buf [8]string // most echo and filter commands have few words: no allocation for them
	args := buf[:0]
	for _, w := range argv[1:] {
		if w.dynamic {
			return "", false
		}
		args = append(args, w.s)
	}
	name := commandName(argv[0].s)
	switch name {
	case "echo":
		return echoText(args), true
	case "printf":
		return printfText(args)
	}
	p := lookupProgram(name)
	if p == nil || p.filter == "" {
		return "", false
	}
	for _, r := range st.Redirs {
		if r.Op == syntax.WordHdoc || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc {
			body := r.Hdoc
			if r.Op == syntax.WordHdoc {
				body = r.Word
			}
			s, ok := c.staticString(body)
			if !ok {
				return "", false
			}
			if r.Op == syntax.WordHdoc {
				s += "\n"
			}
			in, inKnown = s, true
		}
	}
	if !inKnown {
		return "", false
	}
	return applyFilter(p, args, in)
}

// mayWriteLiteral reports whether call, by its name as written, may be
// echo, printf or a filter: the others are not expanded to find out.
func mayWriteLiteral(call *syntax.CallExpr) bool {
	lit := wordLit(call.Args[0])
	if lit == "" || strings.IndexByte(lit, '\\') >= 0 {
		return true // quoted, escaped or expanded: only its expansion says
	}
	name := commandName(lit)
	if name == "echo" || name == "printf" {
		return true
	}
	p := lookupProgram(name)
	return p != nil && p.filter != ""
}

// applyFilter is what the filter p, given args, prints of in.
func applyFilter(p *program, args []string, in string) (string, bool) {
	var ops []string
	on := len(p.filterWhen) == 0
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-") && a != "-":
			for _, w := range p.filterWhen {
				if a == w || len(w) == 2 && len(a) > 2 && a[1] != '-' && strings.IndexByte(a[1:], w[1]) >= 0 {
					on = true
				}
			}
		default:
			ops = append(ops, a)
		}
	}
	if !on {
		return "", false
	}
	switch p.filter {
	case "copy":
		if len(ops) > 0 && !(len(ops) == 1 && ops[0] == "-") {
			if p.restFrom > 0 && p.rest.role == roleWrite {
				return in, true // tee FILE... copies its stdin to its stdout too
			}
			return "", false // cat FILE: a file's text is not known here
		}
		return in, true
	case "base64-decode", "base32-decode":
		s := strings.Join(strings.Fields(in), "")
		var b []byte
		var err error
		if p.filter == "base64-decode" {
			b, err = base64.StdEncoding.DecodeString(s)
			if err != nil {
				b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
			}
		} else {
			b, err = base32.StdEncoding.DecodeString(s)
		}
		return string(b), err == nil && len(ops) == 0
	case "hex-decode":
		b, err := hex.DecodeString(strings.Join(strings.Fields(in), ""))
		return string(b), err == nil && len(ops) == 0
	case "reverse":
		if len(ops) > 0 {
			return "", false
		}
		lines := strings.Split(in, "\n")
		for i, l := range lines {
			r := []rune(l)
			for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
				r[a], r[b] = r[b], r[a]
			}
			lines[i] = string(r)
		}
		return strings.Join(lines, "\n"), true
	case "translate":
		if len(ops) != 2 || len(args) != 2 {
			return "", false // tr -d, -s, -c: not modelled
		}
		from, to := []rune(trSet(ops[0])), []rune(trSet(ops[1]))
		if len(from) == 0 || len(to) == 0 {
			return "", false
		}
		m := map[rune]rune{}
		for i, r := range from {
			m[r] = to[min(i, len(to)-1)]
		}
		return strings.Map(func(r rune) rune {
			if t, ok := m[r]; ok {
				return t
			}
			return r
		}, in), true
	}
	return "", false
}

// trSet expands the ranges of a tr set (a-z); classes ([:alpha:]) are not
// modelled, and make the set empty.
func trSet(s string) string {
	if strings.Contains(s, "[:") || strings.Contains(s, "[=") || strings.ContainsRune(s, '\\') {
		return ""
	}
	var b strings.Builder
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		if i+2 < len(r) && r[i+1] == '-' && r[i] <= r[i+2] && r[i+2]-r[i] < 256 {
			for x := r[i]; x <= r[i+2]; x++ {
				b.WriteRune(x)
			}
			i += 2
			continue
		}
		b.WriteRune(r[i])
	}
	return b.String()
}

// followRedirects notes what a statement's redirections make known to the
// commands after it: exec 3<<<TEXT opens a descriptor of that text, and
// > FILE, >> FILE of a literal (echo, printf, cat of a here-document) write
// the text to the file. It also feeds <&3 of a known descriptor to the
// statement's command, as a here-string.
func (c *checker) followRedirects(src string, st *syntax.Stmt, ws *walkState) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	bareExec := len(call.Args) == 1 && wordLit(call.Args[0]) == "exec"
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			if !bareExec || r.N == nil || r.N.Value == "0" {
				continue
			}
			body := r.Hdoc
			if r.Op == syntax.WordHdoc {
				body = r.Word
			}
			if s, ok := c.staticString(body); ok && len(s) <= maxFollowed {
				if c.fdText == nil {
					c.fdText = map[string]string{}
				}
				c.fdText[r.N.Value] = s
			}
		case syntax.DplIn:
			fd := wordLit(r.Word)
			if text, ok := c.fdText[fd]; ok && (r.N == nil || r.N.Value == "0") {
				ctx := ws.ctxs[call]
				ctx.redirIn, ctx.hereDoc = true, &text
				ws.setCtx(call, ctx)
			}
		case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll:
			if r.N != nil && r.N.Value != "1" || len(c.files) == 0 && !mayWriteLiteral(call) {
				continue // > build.log of a command that writes no literal text, and no file to forget
			}
			target, ok := c.staticString(r.Word)
			if !ok {
				continue
			}
			text, known := c.literalText(src, st, "", false)
			c.wrote(target, text, known, r.Op == syntax.AppOut || r.Op == syntax.AppAll)
		}
	}
}

// wrote records that the script wrote text (known, else unknown) to the
// file target.
func (c *checker) wrote(target, text string, known, appended bool) {
	if !known && len(c.files) == 0 {
		return // nothing known to forget: most redirects (> build.log) end here
	}
	key := c.followedPath(target)
	if key == "" {
		return
	}
	if c.files == nil {
		c.files = map[string]followedFile{}
	}
	old, had := c.files[key]
	switch {
	case !known:
		c.files[key] = followedFile{}
	case appended && had:
		if old.known && len(old.text)+len(text) <= maxFollowed {
			c.files[key] = followedFile{text: old.text + text, known: true}
		}
	case len(text) <= maxFollowed:
		c.files[key] = followedFile{text: text, known: !appended || !had}
	}
}

// followedFile is the text the script wrote to a file, if it is known.
type followedFile struct {
	text  string
	known bool
}

// followedPath is the key of a file of c.files: its path from the
// directory the script is in.
func (c *checker) followedPath(p string) string {
	if p == "" || strings.HasPrefix(p, "/dev/") {
		return ""
	}
	if strings.HasPrefix(p, "~") {
		return path.Clean(p)
	}
	if !strings.HasPrefix(p, "/") {
		p = c.dir() + "/" + p
	}
	return path.Clean(p)
}

// fileText is the text the script wrote to the file p, if it is known.
func (c *checker) fileText(p string) (string, bool) {
	if len(c.files) == 0 {
		return "", false
	}
	f, ok := c.files[c.followedPath(p)]
	return f.text, ok && f.known
}

// readFiles judges, for a program whose entry says it runs files (make
// its makefile, git its hooks), the text the script wrote to them.
func (c *checker) readFiles(p *program, name string, depth int) {
	for key, f := range c.files {
		if !f.known {
			continue
		}
		base := key[strings.LastIndexByte(key, '/')+1:]
		for i, pat := range p.reads {
			if b := p.readsBase[i]; b != "" && b != base || !pathMatches(key, pat) {
				continue // the last component tells most files from most patterns
			}
			old := c.setVia(name, "reads "+pat, p.readsRole)
			c.judgeWord(nil, name, p.readsRole, word{s: f.text}, nil, depth)
			c.leaveVia(old, p.readsRole)
			if c.done() {
				return
			}
		}
	}
}

// pathMatches reports whether the path key ends with the components of pat
// (a * matches one component, or part of one). It splits neither: it is
// asked for every file written and every pattern of each program that
// reads files.
func pathMatches(key, pat string) bool {
	for pat != "" {
		var pc, kc string
		if k := strings.LastIndexByte(pat, '/'); k >= 0 {
			pc, pat = pat[k+1:], pat[:k]
		} else {
			pc, pat = pat, ""
		}
		k := strings.LastIndexByte(key, '/')
		if k < 0 {
			return false
		}
		kc, key = key[k+1:], key[:k]
		if pc != kc && pc != "*" {
			if !strings.ContainsAny(pc, "*?[") {
				return false
			}
			if ok, _ := path.Match(pc, kc); !ok {
				return false
			}
		}
	}
	return true
}

// hasFileText reports whether the script wrote known text to the file p.
func (c *checker) hasFileText(p string) bool {
	_, ok := c.fileText(p)
	return ok
}

// fdContext is ctx for a script read from the descriptor path p
// (/dev/fd/3): when exec opened the descriptor on literal text and no
// redirection of the command itself feeds it, that text.
func (c *checker) fdContext(p string, ctx *cmdContext) *cmdContext {
	if ctx.hereDoc != nil || len(c.fdText) == 0 {
		return ctx
	}
	fd := strings.TrimPrefix(strings.TrimPrefix(p, "/proc/self/fd/"), "/dev/fd/")
	text, ok := c.fdText[fd]
	if !ok {
		return ctx
	}
	out := *ctx
	out.hereDoc, out.redirIn = &text, true
	return &out
}

// copiesStdin records the files a program that copies its stdin to its
// operands (tee) writes, with the text when it is known.
func (c *checker) copiesStdin(p *program, argv []word, ctx *cmdContext) {
	text, known := "", false
	switch {
	case ctx.hereDoc != nil:
		text, known = *ctx.hereDoc+"\n", true
	case ctx.stdinText != nil:
		text, known = *ctx.stdinText, true
	}
	appended := false
	for _, a := range argv[1:] {
		switch {
		case a.dynamic:
		case a.s == "-a" || a.s == "--append":
			appended = true
		case strings.HasPrefix(a.s, "-"):
		default:
			c.wrote(a.s, text, known, appended)
		}
	}
}
