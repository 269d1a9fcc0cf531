package junit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// The shape a report may have. go-junit builds a tree of the whole document and
// keeps a copy of every element's inner XML, so a report costs far more memory
// than its size: each byte is held once for every element around it, and each
// element costs about elementCost besides. A report of deeply nested elements, or
// of a few hundred thousand tiny ones, would take gigabytes or hundreds of
// megabytes from MaxBytes of input. checkShape estimates that cost from a stream
// of tokens and refuses the file above maxCost. Real reports are shallow (suites,
// maybe nested suites, cases, a failure) and come in far under it.
const (
	// MaxDepth is the deepest an element may be nested.
	MaxDepth = 32
	// elementCost is about what go-junit spends on one element, measured.
	elementCost = 1 << 10
	// maxCost bounds the estimated bytes go-junit takes for one file.
	maxCost = 16 * MaxBytes
)

// checkShape reads data as a stream of XML tokens, building nothing, and refuses
// it if it is not well-formed XML or if go-junit would take too much memory for
// it. Custom entities, the stuff of "billion laughs", are not expanded by
// encoding/xml: using one is an error here.
func checkShape(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var depth, cost, last int64
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		// go-junit wraps the document in one more element of its own, hence +1.
		off := dec.InputOffset()
		cost += (off - last) * (depth + 1)
		last = off
		switch tok.(type) {
		case xml.StartElement:
			depth++
			cost += elementCost
			if depth > MaxDepth {
				return fmt.Errorf("elements nested more than %d deep", MaxDepth)
			}
		case xml.EndElement:
			depth--
		}
		if cost > maxCost {
			return fmt.Errorf("too many elements or too deeply nested for its size: would take over %d MiB to parse", maxCost>>20)
		}
	}
}
