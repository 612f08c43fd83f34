// The Go binding of wsem.  The module path is not fetched from anywhere:
// ".example" is a reserved top-level domain, so it can never clash with a
// real module; import it with a replace directive (see README.md) or from
// a vendored copy.  Standard library only: it builds with Debian's golang
// (1.19) on a machine without network access.
module wsem.example/wsem

go 1.19
