import { describe, expect, it } from 'vitest';
import { fillPreviewTemplate, previewPageUrl } from './preview-url.ts';

describe('a preview URL template', () => {
  it('is filled from the event: pull request, DNS-safe branch, commit', () => {
    expect(fillPreviewTemplate('https://pr-{pullRequest}.preview.example', { pullRequest: 7 })).toEqual({
      url: 'https://pr-7.preview.example',
    });
    expect(
      fillPreviewTemplate('https://{branch}.preview.example/{sha}/', { branch: 'Feature/Login_2', sha: 'abc1234' }),
    ).toEqual({ url: 'https://feature-login-2.preview.example/abc1234/' });
  });

  it('names the placeholder the event gives no value for', () => {
    expect(fillPreviewTemplate('https://pr-{pullRequest}.preview.example', { sha: 'abc1234' })).toEqual({
      missing: 'pullRequest',
    });
    expect(fillPreviewTemplate('https://{branch}.preview.example', { branch: '///' })).toEqual({ missing: 'branch' });
  });
});

describe("a preview's page", () => {
  it("is the preview's origin and base path followed by the project's path and query", () => {
    expect(previewPageUrl('https://pr-7.preview.example', 'https://shop.example/cart?x=1')).toBe(
      'https://pr-7.preview.example/cart?x=1',
    );
    expect(previewPageUrl('https://preview.example:8443/pr/7/', 'https://shop.example/')).toBe(
      'https://preview.example:8443/pr/7/',
    );
    expect(previewPageUrl('http://127.0.0.1:4000/base', 'https://shop.example/a/b')).toBe(
      'http://127.0.0.1:4000/base/a/b',
    );
  });

  it('is none for an origin that is not http(s), or carries credentials', () => {
    expect(previewPageUrl('ftp://preview.example', 'https://shop.example/')).toBeNull();
    expect(previewPageUrl('https://user:pw@preview.example', 'https://shop.example/')).toBeNull();
    expect(previewPageUrl('not a url', 'https://shop.example/')).toBeNull();
  });
});
