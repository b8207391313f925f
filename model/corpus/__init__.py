"""The corpus index: a model run over a corpus once, kept on disk, then searched and mapped.

``IndexBuilder`` (build.py) decodes every sentence of a corpus (a built-in one or the user's file, sources.py) greedily
in batches and keeps, per token, its residual-stream vector at chosen layers (reduced by PCA, reduce.py), the queries
and keys of chosen heads, and per sentence and head the statistics of the heads table (extract.py). The folder it
fills (layout.py) holds a DuckDB database (store.py), memory-mapped .npy arrays (chunks.py), a manifest naming the
model by its digest, and Parquet copies of the tables: other tools read it with SQL. Indexing goes in chunks committed
whole, so it can be cancelled and resumed, and a full disk keeps what was finished.

``CorpusIndex`` (index.py) reads an index; search.py finds the nearest tokens at a layer and the sentences where a
head behaves a given way (a small predicate language, never raw SQL); qk.py projects a head's queries and keys
together (PCA, UMAP, t-SNE) into map_panel.py's points, which the joint query-key map (model/figures/qk_map.py) draws.
"""
