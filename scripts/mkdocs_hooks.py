"""MkDocs hook (mkdocs.yml `hooks:`): the Markdown files that live beside their code stay there
and are built into the site as they are, one source for both.

queue/README.md and queue/PROTOCOL.md are read by the queue's tests and bench/README.md holds the
tables the benchmark scripts print, so they are not moved into docs/. Pages link to them with
the relative paths that work on GitHub too (`../queue/README.md`); this hook adds each file under
that same path, so MkDocs resolves those links, checks them in strict mode and builds the pages.
"""

from mkdocs.structure.files import File, InclusionLevel

# Repository path -> where it goes in the site. The images are those queue/README.md shows.
OUTSIDE_DOCS = {
    "queue/README.md": "queue-api/index.html",
    "queue/PROTOCOL.md": "queue-protocol/index.html",
    "bench/README.md": "bench-results/index.html",
    "docs/dashboard.png": "queue-api/dashboard.png",
}


def on_files(files, config):
    for repo_path, dest_uri in OUTSIDE_DOCS.items():
        # Named as a page in docs/ links to it (../queue/README.md), and as queue/README.md's own
        # links resolve from there (../docs/dashboard.png).
        files.append(File(f"../{repo_path}", config["docs_dir"], config["site_dir"],
                          config["use_directory_urls"], dest_uri=dest_uri,
                          # included explicitly: the default exclusion of dotted paths would drop them
                          inclusion=InclusionLevel.INCLUDED))
    return files
