// Package natsauth gives every agentic identity its NATS identity, made
// from the cluster's one root of trust (bus/trust), and the least
// privileges its roles need, in NATS's decentralized JWT form so that the
// embedded server and an external NATS cluster enforce them alike.
//
// The chain (docs/security.md, "NATS identity"):
//
//	root (trust.Root, Ed25519)
//	  └─ NATS operator nkey   derived from the root seed (HKDF, PurposeOperator)
//	       ├─ system account   derived (PurposeSystemAccount): the server's $SYS
//	       └─ AGENTIC account  derived (PurposeAccount): every node and operator
//	            └─ one user per identity: its nkey derived from the identity's
//	               own Ed25519 key (PurposeUser); its JWT, signed by the
//	               account's signing key of the root that issued the
//	               identity's credential (SigningKey), carries
//	               Permissions(kind, id, roles)
//
// A root rotation keeps the operator and accounts: the new root inherits
// their seeds (RotateRoot, trust.Rotate). The account JWT lists the
// signing keys of the roots its issuer trusts; dropping a retired root's
// cuts off every user it signed (docs/security.md, "NATS across a
// rotation").
//
// Nothing here is a second secret: whoever holds root.key can make every
// operator and account JWT again (Authority), and whoever holds an
// identity's key can make its user nkey (UserKey). Only the root holder can
// issue user JWTs and revocations; a revocation is a new AGENTIC account
// JWT (AccountJWT with the revoked user keys) pushed to the servers
// (PushAccount), which close the revoked users' connections.
//
// Servers trust the operator JWT (bus/embedded.OperatorOptions); clients connect with a
// user JWT and its nkey (Creds, or ConnectOptions) and the inbox prefix of
// their identity (InboxPrefix), the only inbox they may subscribe to.
package natsauth
