using System.Net;
using AngleSharp.Dom;
using AngleSharp.Html.Dom;
using AngleSharp.Html.Parser;

namespace Queue.Tests.Admin;

/// <summary>
/// Drives the Admin pages the way a browser without JavaScript does: GET a page, fill a form found in it (hidden
/// antiforgery token included), POST it, follow the redirect.
/// </summary>
public sealed class AdminBrowser(HttpClient http) : IDisposable
{
    private static readonly HtmlParser Parser = new();

    /// <summary>The address each page came from: a form without an action posts back to it.</summary>
    private readonly System.Runtime.CompilerServices.ConditionalWeakTable<IDocument, string> urls = [];

    public HttpClient Http { get; } = http;

    public async Task<IHtmlDocument> GetAsync(string url, HttpStatusCode expected = HttpStatusCode.OK)
    {
        using var r = await Http.GetAsync(new Uri(url, UriKind.Relative));
        var body = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == expected, $"GET {url}: {(int)r.StatusCode}, expected {(int)expected}\n{body}");
        var doc = await Parser.ParseDocumentAsync(body);
        urls.AddOrUpdate(doc, url);
        return doc;
    }

    /// <summary>Submits <paramref name="form"/> with its current values, changed by <paramref name="values"/>.</summary>
    public async Task<HttpResponseMessage> SubmitAsync(IElement form, IDictionary<string, string>? values = null, bool withToken = true)
    {
        var fields = new List<KeyValuePair<string, string>>();
        foreach (var input in form.QuerySelectorAll("input, select, textarea"))
        {
            var name = input.GetAttribute("name");
            if (string.IsNullOrEmpty(name) || (!withToken && name == "__RequestVerificationToken"))
            {
                continue;
            }
            var value = input switch
            {
                IHtmlSelectElement s => s.Value ?? "",
                IHtmlTextAreaElement t => t.Value,
                _ => input.GetAttribute("value") ?? "",
            };
            fields.Add(new(name, value));
        }
        foreach (var (k, v) in values ?? new Dictionary<string, string>())
        {
            fields.RemoveAll(f => f.Key == k);
            fields.Add(new(k, v));
        }
        var action = form.GetAttribute("action");
        if (string.IsNullOrEmpty(action))
        {
            action = urls.TryGetValue(form.Owner!, out var u) ? u : throw new InvalidOperationException("form without action on a page of unknown address");
        }
        using var content = new FormUrlEncodedContent(fields);
        return await Http.PostAsync(new Uri(action, UriKind.Relative), content);
    }

    /// <summary>Submits and expects the post-redirect-get pattern; returns the page redirected to.</summary>
    public async Task<IHtmlDocument> SubmitAndFollowAsync(IElement form, IDictionary<string, string>? values = null)
    {
        using var r = await SubmitAsync(form, values);
        var body = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == HttpStatusCode.Redirect, $"expected a redirect, got {(int)r.StatusCode}\n{body}");
        return await GetAsync(r.Headers.Location!.OriginalString);
    }

    /// <summary>Submits and expects the page itself back (a validation message, a confirmation step, a one-time secret).</summary>
    public async Task<IHtmlDocument> SubmitForPageAsync(IElement form, IDictionary<string, string>? values = null)
    {
        using var r = await SubmitAsync(form, values);
        var body = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == HttpStatusCode.OK, $"expected 200, got {(int)r.StatusCode}\n{body}");
        var doc = await Parser.ParseDocumentAsync(body);
        urls.AddOrUpdate(doc, r.RequestMessage!.RequestUri!.PathAndQuery);
        return doc;
    }

    public async Task SignInAsync(string login, string password)
    {
        var page = await GetAsync("/Account/Login");
        using var r = await SubmitAsync(page.QuerySelector("form")!, new Dictionary<string, string> { ["Login"] = login, ["Password"] = password });
        Assert.Equal(HttpStatusCode.Redirect, r.StatusCode);
    }

    public void Dispose() => Http.Dispose();
}
