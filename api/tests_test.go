package api

import (
	"errors"
	"strings"
	"testing"
)

func TestParseReport(t *testing.T) {
	for _, tt := range []struct{ in, glob string }{
		{"junit:reports/*.xml", "reports/*.xml"},
		{"junit:report.xml", "report.xml"},
		{"junit:target/surefire-reports/TEST-*.xml", "target/surefire-reports/TEST-*.xml"},
		{"junit:./reports//junit-[0-9].xml", "reports/junit-[0-9].xml"},
		{"junit:a:b.xml", "a:b.xml"}, // only the first colon ends the format
		{"junit:..report.xml", "..report.xml"},
		{"junit:résultats/*.xml", "résultats/*.xml"},
	} {
		format, glob, err := ParseReport(tt.in)
		if err != nil || format != ReportJUnit || glob != tt.glob {
			t.Errorf("ParseReport(%q) = %q, %q, %v; want junit, %q", tt.in, format, glob, err, tt.glob)
		}
	}

	for _, tt := range []struct{ in, why string }{
		{"", "want FORMAT:GLOB"},
		{"reports/*.xml", "want FORMAT:GLOB"},
		{"tap:out.tap", `unknown format "tap"`},
		{"JUnit:r.xml", `unknown format "JUnit"`},
		{":r.xml", `unknown format ""`},
		{"junit:", "empty"},
		{"junit:/workspace/reports/*.xml", "absolute"},
		{"junit:../secrets/*.xml", ".. part"},
		{"junit:reports/../../etc/passwd", ".. part"},
		{"junit:reports/..", ".. part"},
		{"junit:reports/**/*.xml", "**"},
		{"junit:*/target/TEST-*.xml", "pattern in its directory"},
		{"junit:reports/a**.xml", "**"},
		{"junit:reports/[.xml", "malformed"},
		{"junit:reports/x\\", "malformed"},
		{"junit:r\x00.xml", "NUL"},
		{"junit:.", "workspace itself"},
		{"junit:./", "names a directory"},
		{"junit:reports/", "names a directory; name the files in it, e.g. reports/*.xml"},
		{"junit:" + strings.Repeat("a", 2000), "more than 1024"},
	} {
		_, _, err := ParseReport(tt.in)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "report" || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("ParseReport(%q) = %v; want a report SpecError saying %q", tt.in, err, tt.why)
		}
	}
}
