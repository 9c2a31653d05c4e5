// Package docs holds tests of the project's documentation against its code: the rulebook
// (docs/kic-compat.md) that the code cites.
package docs
