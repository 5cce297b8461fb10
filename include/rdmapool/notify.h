/* Telling a service manager how a daemon is doing: systemd's sd_notify
 * protocol (a datagram of "KEY=value" lines to $NOTIFY_SOCKET), written out
 * here because it is a few lines and stable (sd_notify(3) documents it for
 * exactly this), so the programs need no libsystemd. */
#ifndef RDMAPOOL_NOTIFY_H
#define RDMAPOOL_NOTIFY_H

/* Send state (e.g. "READY=1\nSTATUS=serving") to the service manager.
 * Returns 1 when sent, 0 when no manager listens ($NOTIFY_SOCKET unset),
 * or a negative errno. */
int rp_notify(const char *state);

#endif
