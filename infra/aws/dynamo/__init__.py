"""The DynamoDB job store: item encoding, the table and its low-level operations, claims and
leases, and the store itself."""

__all__ = []
