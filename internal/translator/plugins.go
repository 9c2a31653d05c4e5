package translator

// plugins attaches KongPlugins and KongClusterPlugins (kic-compat.md §8). Not implemented yet.
func (b *builder) plugins() {}
