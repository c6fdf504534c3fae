/**
 * A URL as logs and errors show it: without its user info and with its query replaced by `?…`.
 * Mirrors put credentials in either (`https://user:token@mirror/…`, presigned
 * `?X-Amz-Signature=…`), and node preparation logged the manifest URL verbatim (red-team
 * finding). Anything that is not an http(s) URL is shown as it is.
 */
export function shownUrl(location: string): string {
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    return location;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return location;
  const hidden = url.search === '' ? '' : '?…';
  url.username = '';
  url.password = '';
  url.search = '';
  return `${url.toString()}${hidden}`;
}
