"""The running exporter: pollers per target, the pipeline poll -> join -> store -> engine, the store, freshness and memory policy."""
