// Package docs holds tests of the project's documentation against its code: the rulebook
// (docs/translation-rules.md) that the code cites.
package docs
