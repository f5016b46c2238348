#!/bin/sh
# Main process of an inventory lab host (docs/inventory.md): what a server has before anyone
# starts a cluster on it. Host keys are made on first start; the controller's public key comes
# from /etc/ndbchaos/authorized_keys (mounted read-only). sshd then runs in the foreground as
# PID 1 and reaps what is orphaned under it (a daemonized ndb_mgmd, an angel, mysqld).
set -e
ssh-keygen -A >/dev/null
if [ -r /etc/ndbchaos/authorized_keys ]; then
  install -m 0600 /etc/ndbchaos/authorized_keys /root/.ssh/authorized_keys
fi
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UseDNS=no
