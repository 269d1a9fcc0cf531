package policy

// Shell patterns, matched against text or against each other: a write
// target may be a glob (> /et?/hosts) and so may a deny_write_paths entry
// (/etc/**), and a parameter's value may lose a matching prefix or suffix
// (${PWD%/*}).

// globMatch reports whether the shell pattern matches all of s: * matches
// any run of bytes, ? one byte, [...] one byte of a class ([!...] or [^...]
// one not in it); a backslash quotes the next byte. Unlike a pathname
// expansion, * and ? match a slash, as in ${x%pattern} and case.
func globMatch(pattern, s string) bool {
	// The classic two-pointer match, with one backtracking point for the
	// last *: linear in practice, never exponential.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starI = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if ok, n := classMatch(pattern[p:], s[i]); n > 0 {
					if ok {
						p += n
						i++
						continue
					}
					break
				}
				if s[i] == '[' {
					p++
					i++
					continue
				}
			case '\\':
				if p+1 < len(pattern) && pattern[p+1] == s[i] {
					p += 2
					i++
					continue
				}
			default:
				if pattern[p] == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		p, starI = starP+1, starI+1
		i = starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// classMatch matches b against the bracket expression at the start of
// pattern; n is the expression's length, 0 when it is not closed (then [ is
// itself).
func classMatch(pattern string, b byte) (ok bool, n int) {
	k := 1
	negate := k < len(pattern) && (pattern[k] == '!' || pattern[k] == '^')
	if negate {
		k++
	}
	first := k
	for ; k < len(pattern); k++ {
		c := pattern[k]
		if c == ']' && k > first {
			return ok != negate, k + 1
		}
		if k+2 < len(pattern) && pattern[k+1] == '-' && pattern[k+2] != ']' {
			if c <= b && b <= pattern[k+2] {
				ok = true
			}
			k += 2
			continue
		}
		if c == b {
			ok = true
		}
	}
	return false, 0
}

// globsMeet reports whether some path matches both path globs a and b: *
// and ? stay within a component, ** (in b, a deny_write_paths entry) spans
// components, [...] is taken for any one byte. It tells whether a write to
// a glob target (> /et?/hosts) may write a path the operator denies.
func globsMeet(a, b string) bool {
	seen := make(map[[2]int]bool)
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := seen[key]; ok {
			return v
		}
		seen[key] = false
		r := false
		switch {
		case i == len(a) && j == len(b):
			r = true
		case j+1 < len(b) && b[j] == '*' && b[j+1] == '*':
			// ** matches nothing, or one more byte of a (a component's * too).
			r = meet(i, j+2) || i < len(a) && meet(i+1, j) || i < len(a) && a[i] == '*' && meet(i+1, j)
		case i < len(a) && a[i] == '*':
			r = meet(i+1, j) || j < len(b) && b[j] != '/' && meet(i, j+1+classLen(b[j:]))
		case j < len(b) && b[j] == '*':
			r = meet(i, j+1) || i < len(a) && a[i] != '/' && meet(i+1+classLen(a[i:]), j)
		case i < len(a) && j < len(b):
			ca, cb := a[i], b[j]
			anyA, anyB := ca == '?' || ca == '[', cb == '?' || cb == '['
			if anyA && cb != '/' || anyB && ca != '/' || ca == cb {
				r = meet(i+1+classLen(a[i:]), j+1+classLen(b[j:]))
			}
		}
		seen[key] = r
		return r
	}
	return meet(0, 0)
}

// classLen is how many bytes after the first a bracket expression at the
// start of s takes (0 for anything else).
func classLen(s string) int {
	if s == "" || s[0] != '[' {
		return 0
	}
	if _, n := classMatch(s, 0); n > 0 {
		return n - 1
	}
	return 0
}
