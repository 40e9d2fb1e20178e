export default {
  async fetch(): Promise<Response> {
    return new Response("ok");
  },
};
export class ThreadObject {}
export class AddressBucket {}
