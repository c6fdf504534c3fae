import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  InitRequest,
  InitResponse,
  InitServiceClient,
  InitServiceService,
  InitStep,
  StepState,
  grpcMessageLimits,
} from './index.js';
import type { InitServiceServer } from './index.js';

/** Starts a real grpc-js server on 127.0.0.1:0 with the generated InitService definition. */
async function startServer(impl: InitServiceServer): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server(grpcMessageLimits);
  server.addService(InitServiceService, impl);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, boundPort) => {
      if (err) reject(err);
      else resolve(boundPort);
    });
  });
  return { server, address: `127.0.0.1:${port}` };
}

/** Reads a server stream to its end, returning the messages and the final status. */
function collect(
  stream: grpc.ClientReadableStream<InitResponse>,
): Promise<{ messages: InitResponse[]; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    const messages: InitResponse[] = [];
    stream.on('data', (message: InitResponse) => messages.push(message));
    stream.on('error', (error: grpc.ServiceError) => {
      resolve({ messages, error });
    });
    stream.on('end', () => {
      resolve({ messages });
    });
  });
}

const request: InitRequest = {
  initSecret: Buffer.from('init-secret'),
  masterSecret: Buffer.alloc(32, 1),
  masterSalt: Buffer.alloc(32, 2),
  measurementSalt: Buffer.alloc(32, 3),
  kubernetesVersion: 'v1.32.9',
  kubernetesComponents: [
    {
      url: 'file:///opt/kubelet',
      hash: 'sha256:' + 'ab'.repeat(32),
      installPath: '/run/state/bin/kubelet',
      extract: false,
    },
  ],
  clusterName: 'mini',
  apiserverCertSans: ['10.42.0.2'],
  serviceCidr: '10.96.0.0/12',
  conformanceMode: false,
};

describe('generated InitService over real gRPC', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('streams progress then success, and the request arrives intact', async () => {
    let received: InitRequest | undefined;
    const { server, address } = await startServer({
      init: (call) => {
        received = call.request;
        for (const step of [InitStep.INIT_STEP_CHECK_INIT_SECRET, InitStep.INIT_STEP_LOCK_NODE]) {
          call.write({
            kind: { $case: 'progress', value: { step, state: StepState.STEP_STATE_STARTED, detail: '', elapsedMs: 1 } },
          });
          call.write({
            kind: {
              $case: 'progress',
              value: { step, state: StepState.STEP_STATE_SUCCEEDED, detail: 'ok', elapsedMs: 2 },
            },
          });
        }
        call.write({
          kind: {
            $case: 'success',
            value: {
              kubeconfig: Buffer.from('apiVersion: v1'),
              clusterId: Buffer.alloc(32, 9),
              kubernetesVersion: 'v1.32.9',
            },
          },
        });
        call.end();
      },
    });
    const client = new InitServiceClient(address, grpc.credentials.createInsecure(), grpcMessageLimits);
    cleanups.push(() => {
      client.close();
      server.forceShutdown();
    });

    const { messages, error } = await collect(client.init(request, { deadline: Date.now() + 10_000 }));

    expect(error).toBeUndefined();
    expect(received).toEqual(request);
    expect(messages.map((m) => m.kind?.$case)).toEqual(['progress', 'progress', 'progress', 'progress', 'success']);
    const last = messages.at(-1)?.kind;
    expect(last?.$case === 'success' && last.value.clusterId).toEqual(Buffer.alloc(32, 9));
  });

  it('delivers failure, log chunks and logs-done before the non-OK status', async () => {
    const { server, address } = await startServer({
      init: (call) => {
        call.write({
          kind: {
            $case: 'failure',
            value: { error: 'kubeadm init failed', step: InitStep.INIT_STEP_KUBEADM_INIT, retrySafe: false },
          },
        });
        call.write({ kind: { $case: 'log', value: { data: Buffer.from('line 1\n') } } });
        call.write({ kind: { $case: 'log', value: { data: Buffer.from('line 2\n') } } });
        call.write({ kind: { $case: 'logsDone', value: { bytesSent: 14, collectionError: '' } } });
        call.emit('error', { code: grpc.status.INTERNAL, details: 'kubeadm init failed' });
      },
    });
    const client = new InitServiceClient(address, grpc.credentials.createInsecure());
    cleanups.push(() => {
      client.close();
      server.forceShutdown();
    });

    const { messages, error } = await collect(client.init(request, { deadline: Date.now() + 10_000 }));

    expect(messages.map((m) => m.kind?.$case)).toEqual(['failure', 'log', 'log', 'logsDone']);
    const failure = messages[0]?.kind;
    expect(failure?.$case === 'failure' && failure.value).toEqual({
      error: 'kubeadm init failed',
      step: InitStep.INIT_STEP_KUBEADM_INIT,
      retrySafe: false,
    });
    expect(error?.code).toBe(grpc.status.INTERNAL);
    expect(error?.details).toBe('kubeadm init failed');
  });

  it('rejects messages over the size limit on the server', async () => {
    const { server, address } = await startServer({
      init: (call) => {
        call.end();
      },
    });
    const client = new InitServiceClient(address, grpc.credentials.createInsecure());
    cleanups.push(() => {
      client.close();
      server.forceShutdown();
    });
    const oversized = { ...request, apiserverCertSans: ['x'.repeat(5 * 1024 * 1024)] };
    const { error } = await collect(client.init(oversized, { deadline: Date.now() + 10_000 }));
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe('generated messages', () => {
  it('round-trip through the wire codec, including a oneof', () => {
    const message: InitResponse = {
      kind: { $case: 'logsDone', value: { bytesSent: 7, collectionError: 'journal unreadable' } },
    };
    expect(InitResponse.decode(InitResponse.encode(message).finish())).toEqual(message);
  });

  it('fail to decode garbage with an error rather than returning junk silently', () => {
    expect(() => InitRequest.decode(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))).toThrow();
  });
});
