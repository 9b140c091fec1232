using System.Net.Http.Headers;

namespace Queue.Core.Jobs;

/// <summary>The field rules of docs/CONTRACT.md "Customer endpoints", shared by the JSON and the streamed paths.</summary>
public static class JobValidation
{
    public const int MaxJobName = 200;
    public const int MaxDocumentName = 255;
    public const int MaxContentType = 255;
    public const int MaxTasks = 5;

    public static string? JobName(string? name) =>
        name is null ? "is required"
        : name.Length is < 1 or > MaxJobName ? $"must be 1 to {MaxJobName} characters"
        : string.IsNullOrWhiteSpace(name) ? "must not be blank"
        : null;

    public static string? DocumentName(string? name) =>
        name is null ? "is required"
        : name.Length is < 1 or > MaxDocumentName ? $"must be 1 to {MaxDocumentName} characters"
        : string.IsNullOrWhiteSpace(name) ? "must not be blank"
        : name.Any(char.IsControl) ? "must not hold control characters"
        : null;

    public static string? ContentType(string? contentType) =>
        contentType is null ? null
        : contentType.Length is < 1 or > MaxContentType ? $"must be 1 to {MaxContentType} characters"
        : !MediaTypeHeaderValue.TryParse(contentType, out _) ? "is not a media type such as 'application/pdf'"
        : null;

    public static Dictionary<string, string[]> Document(string? name, string? contentType, string field, string contentTypeField = "contentType")
    {
        var errors = new Dictionary<string, string[]>();
        if (DocumentName(name) is { } n)
        {
            errors[field] = [n];
        }
        if (ContentType(contentType) is { } c)
        {
            errors[contentTypeField] = [c];
        }
        return errors;
    }

    /// <summary>A streamed document's name and type, checked before a byte of it is stored.</summary>
    public static void ThrowIfInvalid(IncomingDocument doc)
    {
        var errors = Document(doc.Name, doc.ContentType, "name");
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
    }

    /// <summary>Task names are [a-z0-9-] only (validated before this), so the JSON array needs no escaping.</summary>
    public static string TasksJson(IEnumerable<string> tasks) => "[\"" + string.Join("\",\"", tasks) + "\"]";
}
