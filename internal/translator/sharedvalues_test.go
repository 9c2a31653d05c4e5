package translator

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSharedValuesAreNotWritten translates and renders every golden case (their annotations
// change the fields that point to shared values: protocols, timeouts, retries, strip_path,
// buffering, regex priority, paths) and checks that the values every entity shares are still
// the defaults: a change made by writing through a field's pointer rather than replacing the
// pointer would have changed every entity's.
func TestSharedValuesAreNotWritten(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		renderCase(t, dir)
		assert.Equal(t, "http", sharedHTTP)
		assert.Equal(t, "/", sharedRootPath)
		assert.Equal(t, 80, sharedPort80)
		assert.Equal(t, kongDefaultTimeout, sharedDefaultTimeout)
		assert.Equal(t, 5, sharedRetries)
		assert.Equal(t, 0, sharedZero)
		assert.True(t, sharedTrue)
		assert.False(t, sharedFalse)
	})
}
