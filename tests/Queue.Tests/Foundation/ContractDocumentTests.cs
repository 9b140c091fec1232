using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>
/// docs/CONTRACT.md is the API's text and /openapi/v1.json is generated from the code: the two must list the same
/// routes, and every status code the code declares for a route must be one the contract promises for it.
/// </summary>
public sealed partial class ContractDocumentTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    /// <summary>Served outside the minimal-API endpoints the OpenAPI document describes (the document itself, Prometheus).</summary>
    private static readonly string[] NotInOpenApi = ["GET /openapi/v1.json", "GET /metrics"];

    [Fact]
    public async Task Every_served_route_is_in_the_contract_and_every_route_of_the_contract_is_served()
    {
        var served = await ServedAsync();
        var documented = Documented();
        Assert.Empty(served.Keys.Except(documented.Keys).Order());
        Assert.Empty(documented.Keys.Except(served.Keys).Except(NotInOpenApi).Order());
    }

    [Fact]
    public async Task Every_status_code_the_code_declares_for_a_route_is_one_the_contract_lists_for_it()
    {
        var served = await ServedAsync();
        var documented = Documented();
        var undocumented = served.Where(r => documented.ContainsKey(r.Key))
            .SelectMany(r => r.Value.Except(documented[r.Key]).Select(code => $"{r.Key} {code}")).Order().ToList();
        Assert.Empty(undocumented);
    }

    private async Task<Dictionary<string, HashSet<int>>> ServedAsync()
    {
        var doc = await fx.Api.ClientWithKey(null).GetFromJsonAsync<JsonElement>(new Uri("/openapi/v1.json", UriKind.Relative));
        var routes = new Dictionary<string, HashSet<int>>(StringComparer.Ordinal);
        foreach (var path in doc.GetProperty("paths").EnumerateObject())
        {
            foreach (var op in path.Value.EnumerateObject())
            {
                var codes = op.Value.TryGetProperty("responses", out var responses)
                    ? responses.EnumerateObject().Select(r => int.Parse(r.Name, System.Globalization.CultureInfo.InvariantCulture)).ToHashSet()
                    : [];
                routes[$"{op.Name.ToUpperInvariant()} {path.Name}"] = codes;
            }
        }
        return routes;
    }

    /// <summary>Each route heading (### `METHOD /path?query`) and the codes on its "Answers:" line.</summary>
    private static Dictionary<string, HashSet<int>> Documented()
    {
        var text = File.ReadAllText(Path.Combine(RepoRoot(), "docs", "CONTRACT.md"));
        var routes = new Dictionary<string, HashSet<int>>(StringComparer.Ordinal);
        string? current = null;
        foreach (var line in text.Split('\n'))
        {
            if (RouteHeading().Match(line) is { Success: true } h)
            {
                current = $"{h.Groups[1].Value} {h.Groups[2].Value}";
                routes[current] = [];
            }
            else if (current is not null && line.StartsWith("Answers:", StringComparison.Ordinal))
            {
                routes[current].UnionWith(Code().Matches(line).Select(m => int.Parse(m.Value, System.Globalization.CultureInfo.InvariantCulture)));
            }
        }
        return routes;
    }

    private static string RepoRoot() => RepoDirectory.Root();

    [GeneratedRegex(@"^### `(GET|POST|PUT|PATCH|DELETE) ([^`?\s]+)")]
    private static partial Regex RouteHeading();

    [GeneratedRegex(@"\b[1-5][0-9]{2}\b")]
    private static partial Regex Code();
}
