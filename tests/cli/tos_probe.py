"""The DSCP packets carry, for tests/cli/slurm_marks.sh.

    tos_probe.py recv ADDR PORT        print "TAG DSCP" for each datagram
    tos_probe.py send ADDR PORT TAG DSCP
                                       one datagram TAG, its socket marked
                                       with DSCP (IP_TOS, as any user may)"""
import socket
import sys

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)


def main():
    mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if mode == "send":
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(sys.argv[5]) << 2)
        s.sendto(sys.argv[4].encode(), (addr, port))
        return
    s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    s.bind((addr, port))
    print("ready", flush=True)
    while True:
        data, anc, _, _ = s.recvmsg(256, socket.CMSG_SPACE(4))
        tos = -4
        for level, kind, value in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                tos = value[0]
        print(data.decode(errors="replace"), tos >> 2, flush=True)


main()
