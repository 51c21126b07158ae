// The Cryptography module: see docs/ARCHITECTURE.md. Its code arrives with its issue.
