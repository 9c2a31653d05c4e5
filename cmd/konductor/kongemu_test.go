package main

import (
	"context"
	"testing"
)

func TestKongemuFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a valid command line serves until ctx ends: at once here
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--listen", "127.0.0.1:0", "--router-flavor", "expressions", "--edition", "enterprise"}, true},
		{[]string{"--listen", "127.0.0.1:0", "--router-flavor", "atc"}, false},
		{[]string{"--listen", "127.0.0.1:0", "--edition", "free"}, false},
	} {
		if err := runKongemu(ctx, c.args); (err == nil) != c.ok {
			t.Errorf("%v: got error %v", c.args, err)
		}
	}
}
