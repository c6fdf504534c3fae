import * as grpc from '@grpc/grpc-js';

/** A unary call with a deadline, as a promise. */
export function unary<Req, Res>(
  call: (
    request: Req,
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: (err: grpc.ServiceError | null, response: Res) => void,
  ) => unknown,
  request: Req,
  timeoutMs: number,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    call(request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
      if (err) reject(err);
      else resolve(res);
    });
  });
}
