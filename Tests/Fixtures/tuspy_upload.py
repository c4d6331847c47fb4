"""Uploads one file to a VroomX inspection slot with tuspy, the reference
Python tus client: creation, PATCH chunks with sha1 checksums, and a resume
from the server's offset (a second uploader picks up after the first chunk)."""
import argparse
import sys

from tusclient import client

parser = argparse.ArgumentParser()
parser.add_argument("--endpoint", required=True)
parser.add_argument("--token", required=True)
parser.add_argument("--inspection", required=True)
parser.add_argument("--slot", required=True)
parser.add_argument("--file", required=True)
args = parser.parse_args()

tus = client.TusClient(args.endpoint, headers={"Authorization": "Bearer " + args.token})
metadata = {"inspection_id": args.inspection, "slot": args.slot, "filename": "photo.jpg"}
first = tus.uploader(args.file, chunk_size=128 * 1024, metadata=metadata, upload_checksum=True)
first.upload_chunk()
print("after one chunk:", first.offset, flush=True)

# A new uploader for the same URL asks the server where to continue (HEAD).
resumed = tus.uploader(args.file, url=first.url, chunk_size=128 * 1024, upload_checksum=True)
if resumed.offset != first.offset:
    sys.exit("resumed at %d, expected %d" % (resumed.offset, first.offset))
resumed.upload()
print("uploaded", resumed.url, resumed.offset, flush=True)
