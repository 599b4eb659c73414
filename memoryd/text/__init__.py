"""Text, below storage and search: tokenizers and query terms, the lexicon's data files,
speakers and focus terms of evidence, and the encoders with their vector codes."""
