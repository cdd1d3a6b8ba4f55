# Prints "SOURCE TOS PROTOCOL" for every IPv4 packet that arrives on an interface, for SECONDS: the tests'
# view of what was on the wire (run inside the receiving host's namespace; needs root).
# Usage: python3 sniff.py IFACE SECONDS
import socket, sys, time

ETH_P_IP = 0x0800
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
sock.bind((sys.argv[1], 0))
sock.settimeout(0.2)
print("ready", flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    try:
        frame, info = sock.recvfrom(65535)
    except socket.timeout:
        continue
    if info[2] == socket.PACKET_OUTGOING:
        continue
    ip = frame[14:]
    print(socket.inet_ntoa(ip[12:16]), ip[1], ip[9], flush=True)
