package sourcecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A function over max lines is listed with its file, line and length, closures counted in
// it; one at max is not; test files and declarations without a body are left out.
func TestLongFunctions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n\nfunc short() {\n\t_ = 1\n}\n\nfunc long() {\n\tf := func() {\n\t\t_ = 1\n\t}\n\tf()\n}\n\nfunc external()\n")
	write("a_test.go", "package a\n\nfunc longTest() {\n\t_ = 1\n\t_ = 2\n\t_ = 3\n\t_ = 4\n}\n")
	long, err := LongFunctions(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(long) != 1 || !strings.HasSuffix(long[0], "a.go:7:1 long: 6 lines") {
		t.Fatalf("got %q, want only long, 6 lines at a.go:7", long)
	}
	if long, err := LongFunctions(dir, 6); err != nil || len(long) != 0 {
		t.Fatalf("a function of max lines is listed: %q (%v)", long, err)
	}
	write("broken.go", "package a\n\nfunc {\n")
	if _, err := LongFunctions(dir, 4); err == nil {
		t.Fatal("a file that does not parse gives no error")
	}
}
