"""Deterministically writes articles.json: a fictional but plausible biomedical corpus for the demo site.

Run: `python pages/site/data/make_corpus.py` (no Django needed). Same seed -> byte-identical output,
so the committed JSON can always be regenerated and diffed. Every article is invented: titles and
abstracts are composed from topic-specific phrase banks, with numbers drawn from a seeded RNG.
"""
from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20240611
PER_TOPIC = 33
OUTPUT = Path(__file__).resolve().parent / "articles.json"


@dataclass(frozen=True)
class Cluster:
    """Phrases that belong together (one disease area within a topic), so drugs meet plausible conditions."""

    conditions: list[str]
    populations: list[str]
    interventions: list[str]
    comparators: list[str]
    biomarkers: list[str]
    mechanisms: list[str]
    outcomes: list[str]
    phenotypes: list[str]


@dataclass(frozen=True)
class Topic:
    """One research area: its clusters plus topic-wide phrases (burden, models, keywords, journals)."""

    slug: str
    label: str
    burdens: list[str]
    clusters: list[Cluster]
    models: list[str]
    keywords: list[str]
    journals: list[str]
    # Relative weights of the article kinds (trial, cohort, mechanistic, meta, biomarker).
    kinds: dict[str, int] = field(default_factory=lambda: {"trial": 4, "cohort": 3, "mechanistic": 2, "meta": 1, "biomarker": 2})


C = Cluster  # short alias: the banks below are long

TOPICS: list[Topic] = [
    Topic(
        slug="lung-cancer",
        label="Lung cancer",
        burdens=["the leading cause of cancer death worldwide", "frequently diagnosed at an advanced stage",
                 "a disease in which most patients eventually develop treatment resistance"],
        clusters=[
            C(conditions=["EGFR-mutant non-small cell lung cancer", "ALK-rearranged lung adenocarcinoma",
                          "EGFR exon 20 insertion-positive NSCLC"],
              populations=["previously untreated patients", "patients with brain metastases", "never-smokers",
                           "patients progressing on osimertinib"],
              interventions=["osimertinib", "alectinib", "lorlatinib", "amivantamab plus lazertinib", "osimertinib plus chemotherapy"],
              comparators=["first-generation EGFR inhibitors", "crizotinib", "platinum-pemetrexed chemotherapy", "osimertinib monotherapy"],
              biomarkers=["plasma EGFR mutation clearance", "circulating tumor DNA", "MET amplification", "TP53 co-mutation"],
              mechanisms=["EGFR C797S-mediated resistance", "MET-driven bypass signaling", "histologic transformation to small cell carcinoma"],
              outcomes=["progression-free survival", "intracranial progression-free survival", "overall survival", "objective response rate"],
              phenotypes=["acquired resistance to tyrosine kinase inhibitors", "brain metastasis", "drug-tolerant persister cells"]),
            C(conditions=["non-small cell lung cancer", "KRAS G12C-mutant NSCLC", "resectable stage II-IIIA NSCLC",
                          "squamous cell lung carcinoma"],
              populations=["previously untreated patients", "patients with PD-L1 expression of 50% or more",
                           "patients progressing after platinum-based chemotherapy", "older adults"],
              interventions=["pembrolizumab", "sotorasib", "adagrasib", "neoadjuvant nivolumab plus chemotherapy",
                             "durvalumab consolidation", "perioperative pembrolizumab"],
              comparators=["docetaxel", "platinum-based chemotherapy", "placebo", "chemotherapy alone"],
              biomarkers=["PD-L1 tumor proportion score", "tumor mutational burden", "STK11 co-mutation", "circulating tumor DNA"],
              mechanisms=["KRAS G12C signaling", "STK11 loss", "T-cell exclusion from the tumor microenvironment"],
              outcomes=["event-free survival", "pathological complete response", "overall survival", "progression-free survival"],
              phenotypes=["immune exclusion", "primary resistance to immunotherapy", "early relapse"]),
            C(conditions=["extensive-stage small cell lung cancer", "limited-stage small cell lung cancer"],
              populations=["patients relapsing after first-line chemotherapy", "previously untreated patients", "patients with brain metastases"],
              interventions=["tarlatamab", "durvalumab plus etoposide-platinum", "lurbinectedin", "consolidative thoracic radiotherapy"],
              comparators=["topotecan", "etoposide-platinum alone", "placebo"],
              biomarkers=["DLL3 expression", "ASCL1, NEUROD1 and POU2F3 subtype", "circulating tumor cells"],
              mechanisms=["DLL3 surface expression", "neuroendocrine lineage plasticity", "MYC amplification"],
              outcomes=["overall survival", "progression-free survival", "duration of response"],
              phenotypes=["chemotherapy resistance", "lineage plasticity", "brain metastasis"]),
        ],
        models=["patient-derived xenografts", "lung cancer organoids", "genetically engineered mouse models",
                "plasma cell-free DNA sequencing"],
        keywords=["lung cancer", "NSCLC", "targeted therapy", "immunotherapy", "precision oncology"],
        journals=["Journal of Thoracic Oncology", "Lung Cancer", "Journal of Clinical Oncology", "Lancet Oncology"],
    ),
    Topic(
        slug="breast-cancer",
        label="Breast cancer",
        burdens=["among the most commonly diagnosed cancers in women", "a heterogeneous disease with distinct molecular subtypes",
                 "a leading cause of cancer mortality among women"],
        clusters=[
            C(conditions=["HER2-positive metastatic breast cancer", "HER2-low breast cancer", "HER2-positive early breast cancer"],
              populations=["patients with residual disease after neoadjuvant therapy", "heavily pretreated patients",
                           "patients with active brain metastases"],
              interventions=["trastuzumab deruxtecan", "tucatinib plus trastuzumab and capecitabine",
                             "neoadjuvant pertuzumab plus trastuzumab"],
              comparators=["trastuzumab emtansine", "physician's choice chemotherapy", "placebo"],
              biomarkers=["HER2 expression level", "HER2 immunohistochemistry score", "circulating tumor DNA"],
              mechanisms=["antibody-drug conjugate payload release", "HER2-HER3 dimerization",
                          "bystander killing by topoisomerase I payloads"],
              outcomes=["progression-free survival", "invasive disease-free survival", "pathological complete response",
                        "overall survival"],
              phenotypes=["brain metastasis", "trastuzumab resistance", "interstitial lung disease"]),
            C(conditions=["hormone receptor-positive metastatic breast cancer", "HR-positive, HER2-negative early breast cancer"],
              populations=["postmenopausal women", "premenopausal women", "patients progressing on CDK4/6 inhibitors"],
              interventions=["ribociclib plus endocrine therapy", "abemaciclib", "capivasertib plus fulvestrant", "elacestrant",
                             "camizestrant"],
              comparators=["endocrine therapy alone", "fulvestrant", "placebo"],
              biomarkers=["ESR1 mutation", "PIK3CA mutation", "Ki-67 index", "21-gene recurrence score"],
              mechanisms=["CDK4/6-cyclin D signaling", "PI3K-AKT pathway activation", "estrogen receptor reactivation"],
              outcomes=["invasive disease-free survival", "progression-free survival", "distant recurrence", "overall survival"],
              phenotypes=["endocrine resistance", "late recurrence", "visceral metastasis"]),
            C(conditions=["triple-negative breast cancer", "BRCA-associated breast cancer", "metastatic triple-negative breast cancer"],
              populations=["patients with high-risk early disease", "previously treated patients", "germline BRCA1/2 carriers"],
              interventions=["sacituzumab govitecan", "olaparib", "neoadjuvant pembrolizumab plus chemotherapy",
                             "datopotamab deruxtecan"],
              comparators=["physician's choice chemotherapy", "placebo", "chemotherapy alone"],
              biomarkers=["germline BRCA1/2 status", "tumor-infiltrating lymphocytes", "TROP2 expression",
                          "homologous recombination deficiency score"],
              mechanisms=["homologous recombination deficiency", "PARP trapping", "TROP2-directed payload delivery"],
              outcomes=["pathological complete response", "event-free survival", "overall survival", "progression-free survival"],
              phenotypes=["chemotherapy resistance", "early relapse", "brain metastasis"]),
        ],
        models=["breast cancer organoids", "patient-derived xenografts", "MCF-7 and T47D cell lines",
                "spatial transcriptomics of tumor sections"],
        keywords=["breast cancer", "oncology", "precision oncology", "women's health", "translational oncology"],
        journals=["Journal of Clinical Oncology", "Annals of Oncology", "Breast Cancer Research", "JAMA Oncology"],
    ),
    Topic(
        slug="hematologic-malignancies",
        label="Hematologic malignancies",
        burdens=["a group of cancers with markedly improved but still uneven outcomes",
                 "a setting where relapsed and refractory disease remains difficult to treat",
                 "a rapidly changing field driven by cellular and targeted therapies"],
        clusters=[
            C(conditions=["relapsed or refractory multiple myeloma", "newly diagnosed multiple myeloma"],
              populations=["triple-class exposed patients", "transplant-ineligible patients", "patients with high-risk cytogenetics"],
              interventions=["BCMA-directed CAR T-cell therapy", "teclistamab", "talquetamab", "daratumumab-based quadruplet therapy"],
              comparators=["standard triplet regimens", "autologous stem cell transplantation", "investigator's choice regimen"],
              biomarkers=["measurable residual disease", "soluble BCMA levels", "GPRC5D expression", "high-risk cytogenetic abnormalities"],
              mechanisms=["antigen escape after CAR T therapy", "T-cell exhaustion", "BCMA shedding by gamma-secretase"],
              outcomes=["MRD negativity", "progression-free survival", "overall survival", "cytokine release syndrome"],
              phenotypes=["relapse after cellular therapy", "clonal evolution", "immune effector cell-associated neurotoxicity"]),
            C(conditions=["acute myeloid leukemia", "FLT3-mutated acute myeloid leukemia", "higher-risk myelodysplastic syndromes"],
              populations=["older adults unfit for intensive chemotherapy", "patients in first remission", "patients with TP53-mutated disease"],
              interventions=["venetoclax plus azacitidine", "gilteritinib", "quizartinib", "menin inhibitors",
                             "allogeneic stem cell transplantation"],
              comparators=["azacitidine alone", "intensive chemotherapy", "salvage chemotherapy", "placebo"],
              biomarkers=["measurable residual disease", "TP53 mutation", "FLT3-ITD status", "NPM1 mutation"],
              mechanisms=["BCL-2 dependence", "leukemic stem cell metabolism", "menin-KMT2A interaction"],
              outcomes=["complete remission", "overall survival", "relapse-free survival", "MRD negativity"],
              phenotypes=["leukemic stem cell persistence", "clonal evolution", "differentiation syndrome"]),
            C(conditions=["diffuse large B-cell lymphoma", "chronic lymphocytic leukemia", "mantle cell lymphoma", "follicular lymphoma"],
              populations=["patients relapsing within 12 months", "previously untreated patients", "patients with high-risk disease"],
              interventions=["CD19-directed CAR T-cell therapy", "glofitamab", "epcoritamab", "zanubrutinib", "pirtobrutinib",
                             "venetoclax plus obinutuzumab"],
              comparators=["standard chemoimmunotherapy", "ibrutinib", "autologous stem cell transplantation", "bendamustine-rituximab"],
              biomarkers=["IGHV mutational status", "baseline metabolic tumor volume", "circulating tumor DNA", "TP53 aberration"],
              mechanisms=["BTK C481S resistance mutation", "CD19 antigen loss", "T-cell exhaustion"],
              outcomes=["complete response", "progression-free survival", "duration of response", "overall survival"],
              phenotypes=["relapse after cellular therapy", "Richter transformation", "cytokine release syndrome"]),
        ],
        models=["primary patient blasts", "xenograft mouse models", "single-cell RNA sequencing of bone marrow",
                "CAR T-cell manufacturing products"],
        keywords=["hematologic malignancies", "leukemia", "lymphoma", "myeloma", "CAR-T", "bispecific antibody"],
        journals=["Blood", "Leukemia", "Lancet Haematology", "Blood Advances"],
    ),
    Topic(
        slug="colorectal-cancer",
        label="Colorectal cancer",
        burdens=["one of the most common cancers worldwide", "increasingly diagnosed in adults younger than 50 years",
                 "a cancer in which metastatic disease remains largely incurable"],
        clusters=[
            C(conditions=["metastatic colorectal cancer", "BRAF V600E-mutant colorectal cancer", "HER2-amplified metastatic colorectal cancer"],
              populations=["chemotherapy-refractory patients", "patients with liver-limited metastases", "previously untreated patients"],
              interventions=["encorafenib plus cetuximab", "fruquintinib", "trifluridine-tipiracil plus bevacizumab",
                             "tucatinib plus trastuzumab", "sotorasib plus panitumumab"],
              comparators=["placebo", "FOLFOX plus bevacizumab", "trifluridine-tipiracil alone", "investigator's choice chemotherapy"],
              biomarkers=["KRAS mutation status", "HER2 amplification", "circulating tumor DNA", "consensus molecular subtype"],
              mechanisms=["MAPK pathway reactivation", "EGFR feedback activation", "stromal TGF-beta signaling"],
              outcomes=["overall survival", "progression-free survival", "objective response rate"],
              phenotypes=["resistance to EGFR blockade", "liver metastasis", "tumor budding"]),
            C(conditions=["mismatch repair-deficient colorectal cancer", "locally advanced rectal cancer",
                          "mismatch repair-deficient rectal cancer"],
              populations=["patients seeking organ preservation", "patients with clinical stage II-III disease", "adults younger than 50 years"],
              interventions=["dostarlimab", "total neoadjuvant therapy", "neoadjuvant PD-1 blockade",
                             "short-course radiotherapy followed by chemotherapy"],
              comparators=["standard chemoradiotherapy", "total mesorectal excision", "upfront surgery"],
              biomarkers=["microsatellite instability", "tumor mutational burden", "circulating tumor DNA"],
              mechanisms=["neoantigen-driven T-cell responses", "WNT-beta-catenin signaling", "immune evasion via B2M loss"],
              outcomes=["clinical complete response", "organ preservation", "disease-free survival"],
              phenotypes=["immune evasion", "local regrowth", "tumor budding"]),
            C(conditions=["stage III colon cancer", "stage II colon cancer", "early-onset colorectal cancer"],
              populations=["patients after curative resection", "average-risk screening participants", "adults younger than 50 years"],
              interventions=["ctDNA-guided adjuvant chemotherapy", "multitarget stool DNA screening", "blood-based screening tests", "aspirin"],
              comparators=["standard-of-care adjuvant therapy", "colonoscopy", "fecal immunochemical testing", "placebo"],
              biomarkers=["circulating tumor DNA", "carcinoembryonic antigen", "fecal hemoglobin concentration"],
              mechanisms=["Fusobacterium nucleatum colonization", "WNT-beta-catenin signaling", "epithelial-mesenchymal transition"],
              outcomes=["recurrence-free survival", "screening sensitivity", "colorectal cancer incidence", "disease-free survival"],
              phenotypes=["early recurrence", "interval cancers", "liver metastasis"]),
        ],
        models=["colorectal tumor organoids", "APC-mutant mouse models", "patient-derived xenografts", "spatial proteomics"],
        keywords=["colorectal cancer", "rectal cancer", "gastrointestinal oncology", "ctDNA", "screening"],
        journals=["Gastroenterology", "Journal of Clinical Oncology", "Gut", "Lancet Gastroenterology & Hepatology"],
    ),
    Topic(
        slug="cardiology",
        label="Cardiovascular disease",
        burdens=["a leading cause of death globally", "a major driver of hospitalization and health-care costs",
                 "a condition whose residual risk persists despite guideline-directed therapy"],
        clusters=[
            C(conditions=["heart failure with reduced ejection fraction", "heart failure with preserved ejection fraction",
                          "acute decompensated heart failure"],
              populations=["patients recently hospitalized for heart failure", "patients with type 2 diabetes",
                           "patients with chronic kidney disease", "older adults"],
              interventions=["dapagliflozin", "empagliflozin", "finerenone", "sacubitril-valsartan", "semaglutide"],
              comparators=["placebo", "enalapril", "usual care"],
              biomarkers=["NT-proBNP", "left ventricular ejection fraction", "high-sensitivity troponin",
                          "estimated glomerular filtration rate"],
              mechanisms=["myocardial fibrosis", "mineralocorticoid receptor overactivation", "cardiac metabolic remodeling"],
              outcomes=["cardiovascular death or heart failure hospitalization", "all-cause mortality",
                        "change in Kansas City Cardiomyopathy Questionnaire score", "worsening heart failure events"],
              phenotypes=["adverse ventricular remodeling", "diastolic dysfunction", "congestion"]),
            C(conditions=["acute myocardial infarction", "atherosclerotic cardiovascular disease", "familial hypercholesterolemia",
                          "elevated lipoprotein(a)"],
              populations=["patients with prior myocardial infarction", "statin-intolerant patients", "women",
                           "patients with type 2 diabetes"],
              interventions=["inclisiran", "evolocumab", "bempedoic acid", "colchicine", "pelacarsen", "complete revascularization"],
              comparators=["placebo", "culprit-only revascularization", "usual care"],
              biomarkers=["LDL cholesterol", "lipoprotein(a)", "high-sensitivity C-reactive protein", "coronary artery calcium score"],
              mechanisms=["NLRP3 inflammasome activation", "endothelial dysfunction", "plaque inflammation"],
              outcomes=["major adverse cardiovascular events", "myocardial infarction", "stroke", "LDL cholesterol reduction"],
              phenotypes=["vascular calcification", "plaque rupture", "residual inflammatory risk"]),
            C(conditions=["atrial fibrillation", "paroxysmal atrial fibrillation", "persistent atrial fibrillation"],
              populations=["older adults", "patients with prior stroke", "patients with heart failure"],
              interventions=["catheter ablation", "pulsed field ablation", "left atrial appendage occlusion", "early rhythm control"],
              comparators=["antiarrhythmic drug therapy", "thermal ablation", "oral anticoagulation", "usual care"],
              biomarkers=["left atrial volume index", "NT-proBNP", "atrial fibrillation burden on implantable monitors"],
              mechanisms=["atrial structural remodeling", "pulmonary vein trigger activity", "atrial fibrosis"],
              outcomes=["recurrent atrial fibrillation", "stroke", "death, stroke or rehospitalization"],
              phenotypes=["arrhythmogenesis", "atrial fibrosis", "atrial cardiomyopathy"]),
            C(conditions=["severe aortic stenosis", "obstructive hypertrophic cardiomyopathy", "resistant hypertension"],
              populations=["patients at low surgical risk", "patients with symptomatic disease", "older adults"],
              interventions=["transcatheter aortic valve replacement", "mavacamten", "aficamten", "renal denervation"],
              comparators=["surgical aortic valve replacement", "placebo", "sham procedure"],
              biomarkers=["left ventricular outflow tract gradient", "ambulatory blood pressure", "NT-proBNP"],
              mechanisms=["cardiac myosin hyperactivity", "sympathetic overactivity", "valvular calcification"],
              outcomes=["death, stroke or rehospitalization", "change in 24-hour systolic blood pressure", "improvement in NYHA class"],
              phenotypes=["left ventricular hypertrophy", "myocardial fibrosis", "valve degeneration"]),
        ],
        models=["induced pluripotent stem cell-derived cardiomyocytes", "porcine infarct models", "cardiac magnetic resonance imaging",
                "transgenic mouse models"],
        keywords=["cardiology", "heart failure", "cardiovascular outcomes", "cardiovascular prevention", "lipids"],
        journals=["Circulation", "European Heart Journal", "Journal of the American College of Cardiology", "JAMA Cardiology"],
    ),
    Topic(
        slug="neurology",
        label="Neurology and neurodegeneration",
        burdens=["a growing cause of disability as populations age", "an area with few disease-modifying treatments",
                 "a major source of caregiver burden"],
        clusters=[
            C(conditions=["early Alzheimer's disease", "mild cognitive impairment due to Alzheimer's disease", "preclinical Alzheimer's disease"],
              populations=["amyloid-positive individuals", "carriers of APOE e4", "cognitively unimpaired older adults"],
              interventions=["lecanemab", "donanemab", "subcutaneous lecanemab", "remternetug"],
              comparators=["placebo"],
              biomarkers=["plasma phosphorylated tau 217", "amyloid PET", "tau PET", "glial fibrillary acidic protein",
                          "neurofilament light chain"],
              mechanisms=["amyloid-beta aggregation", "tau propagation", "microglial activation", "TREM2 signaling"],
              outcomes=["change in CDR-SB score", "amyloid-related imaging abnormalities", "cognitive decline", "amyloid clearance"],
              phenotypes=["synaptic loss", "neuroinflammation", "cognitive decline"]),
            C(conditions=["Parkinson's disease", "amyotrophic lateral sclerosis", "early Parkinson's disease",
                          "SOD1-related amyotrophic lateral sclerosis"],
              populations=["patients with SOD1 mutations", "patients with motor fluctuations", "patients within 2 years of diagnosis"],
              interventions=["tofersen", "deep brain stimulation", "prasinezumab", "focused ultrasound subthalamotomy",
                             "continuous subcutaneous levodopa"],
              comparators=["placebo", "best medical management", "sham procedure"],
              biomarkers=["alpha-synuclein seed amplification assay", "neurofilament light chain", "dopamine transporter imaging"],
              mechanisms=["alpha-synuclein misfolding", "TDP-43 pathology", "mitochondrial dysfunction", "LRRK2 kinase activity"],
              outcomes=["change in MDS-UPDRS score", "change in ALSFRS-R score", "time with good motor control", "disability progression"],
              phenotypes=["motor neuron degeneration", "dopaminergic neuron loss", "neuroinflammation"]),
            C(conditions=["acute ischemic stroke", "large-vessel occlusion stroke"],
              populations=["patients presenting within 24 hours of symptom onset", "patients with large ischemic core", "older adults"],
              interventions=["endovascular thrombectomy", "tenecteplase", "intravenous thrombolysis before thrombectomy"],
              comparators=["alteplase", "best medical management", "direct thrombectomy"],
              biomarkers=["infarct core volume", "collateral status", "glial fibrillary acidic protein"],
              mechanisms=["blood-brain barrier disruption", "microvascular no-reflow", "neutrophil-mediated reperfusion injury"],
              outcomes=["functional independence at 90 days", "symptomatic intracranial hemorrhage", "successful reperfusion"],
              phenotypes=["hemorrhagic transformation", "infarct growth", "reperfusion injury"]),
            C(conditions=["relapsing multiple sclerosis", "progressive multiple sclerosis"],
              populations=["treatment-naive patients", "patients with recent disease activity", "patients switching from platform therapy"],
              interventions=["ocrelizumab", "ofatumumab", "tolebrutinib", "autologous hematopoietic stem cell transplantation"],
              comparators=["teriflunomide", "placebo", "natalizumab"],
              biomarkers=["MRI lesion load", "serum neurofilament light chain", "paramagnetic rim lesions"],
              mechanisms=["B-cell-mediated neuroinflammation", "microglial activation", "chronic active lesion expansion"],
              outcomes=["annualized relapse rate", "confirmed disability progression", "no evidence of disease activity"],
              phenotypes=["smoldering lesion expansion", "neuroinflammation", "brain atrophy"]),
            C(conditions=["chronic migraine", "episodic migraine", "drug-resistant focal epilepsy"],
              populations=["patients who failed two preventive treatments", "adolescents", "patients with medication overuse"],
              interventions=["anti-CGRP monoclonal antibodies", "atogepant", "responsive neurostimulation", "cenobamate"],
              comparators=["placebo", "topiramate", "best medical management"],
              biomarkers=["CGRP levels", "interictal epileptiform discharges", "headache diary adherence"],
              mechanisms=["cortical spreading depolarization", "trigeminovascular activation", "thalamocortical network hyperexcitability"],
              outcomes=["monthly migraine days", "50% responder rate", "seizure frequency", "seizure freedom"],
              phenotypes=["central sensitization", "network hyperexcitability", "medication-overuse headache"]),
        ],
        models=["human iPSC-derived neurons", "transgenic mouse models", "brain organoids", "postmortem brain tissue"],
        keywords=["neurology", "neurodegeneration", "neuroimaging", "clinical neuroscience", "biomarkers"],
        journals=["Lancet Neurology", "JAMA Neurology", "Brain", "Annals of Neurology", "Neurology"],
    ),
    Topic(
        slug="immunology",
        label="Immunology and autoimmunity",
        burdens=["a chronic, relapsing burden for millions of patients", "driven by dysregulated immune responses",
                 "a condition in which many patients cycle through multiple biologic therapies"],
        clusters=[
            C(conditions=["rheumatoid arthritis", "psoriatic arthritis", "axial spondyloarthritis"],
              populations=["biologic-naive patients", "patients with inadequate response to TNF inhibitors",
                           "patients with moderate-to-severe disease"],
              interventions=["upadacitinib", "bimekizumab", "secukinumab", "abatacept"],
              comparators=["placebo", "adalimumab", "methotrexate"],
              biomarkers=["anti-citrullinated protein antibodies", "C-reactive protein", "synovial B-cell signature", "serum IL-6"],
              mechanisms=["JAK-STAT signaling", "IL-17 and IL-23 axis", "synovial fibroblast activation"],
              outcomes=["ACR50 response", "clinical remission", "radiographic progression", "ASAS40 response"],
              phenotypes=["joint erosion", "chronic inflammation", "flare"]),
            C(conditions=["systemic lupus erythematosus", "lupus nephritis", "systemic sclerosis", "refractory myasthenia gravis"],
              populations=["patients with refractory disease", "patients with active lupus nephritis", "patients receiving glucocorticoids"],
              interventions=["anifrolumab", "CD19 CAR T-cell therapy", "obinutuzumab", "low-dose interleukin-2", "belimumab"],
              comparators=["placebo", "standard immunosuppression", "mycophenolate mofetil alone"],
              biomarkers=["type I interferon gene signature", "autoantibody titers", "regulatory T-cell frequency", "complement C3 levels"],
              mechanisms=["type I interferon signaling", "B-cell autoreactivity", "regulatory T-cell dysfunction",
                          "neutrophil extracellular trap formation"],
              outcomes=["SLE Responder Index", "complete renal response", "drug-free remission", "glucocorticoid tapering"],
              phenotypes=["loss of tolerance", "tissue fibrosis", "flare"]),
            C(conditions=["ulcerative colitis", "Crohn's disease", "atopic dermatitis", "eosinophilic esophagitis"],
              populations=["adolescents", "patients with inadequate response to biologics", "biologic-naive patients"],
              interventions=["risankizumab", "dupilumab", "mirikizumab", "etrasimod", "lebrikizumab"],
              comparators=["placebo", "ustekinumab", "vedolizumab"],
              biomarkers=["fecal calprotectin", "serum IL-13", "eosinophil counts", "mucosal transcriptomic signature"],
              mechanisms=["IL-23 signaling", "type 2 inflammation", "epithelial barrier dysfunction"],
              outcomes=["clinical remission", "endoscopic remission", "EASI-75 response", "histologic remission"],
              phenotypes=["chronic inflammation", "stricture formation", "barrier dysfunction"]),
        ],
        models=["collagen-induced arthritis mouse models", "synovial tissue biopsies", "peripheral blood mononuclear cells",
                "intestinal organoids"],
        keywords=["immunology", "autoimmunity", "biologics", "inflammation", "JAK inhibitors"],
        journals=["Annals of the Rheumatic Diseases", "Arthritis & Rheumatology", "Science Immunology", "Journal of Crohn's and Colitis"],
    ),
    Topic(
        slug="infectious-disease",
        label="Infectious disease",
        burdens=["a persistent global health threat", "a leading cause of death in low- and middle-income countries",
                 "increasingly complicated by antimicrobial resistance"],
        clusters=[
            C(conditions=["multidrug-resistant tuberculosis", "rifampicin-resistant tuberculosis",
                          "carbapenem-resistant Enterobacterales infection", "carbapenem-resistant Acinetobacter baumannii infection"],
              populations=["hospitalized patients", "people living with HIV", "patients in intensive care units"],
              interventions=["bedaquiline-pretomanid-linezolid", "cefiderocol", "sulbactam-durlobactam", "a 6-month all-oral regimen"],
              comparators=["standard regimen", "best available therapy", "colistin-based therapy"],
              biomarkers=["sputum culture conversion", "carbapenemase gene detection", "minimum inhibitory concentration", "procalcitonin"],
              mechanisms=["efflux pump overexpression", "carbapenemase-mediated resistance", "biofilm formation"],
              outcomes=["treatment success", "28-day mortality", "clinical cure", "relapse-free cure"],
              phenotypes=["antimicrobial resistance", "persistent infection", "treatment failure"]),
            C(conditions=["HIV-1 infection", "HIV pre-exposure prophylaxis", "chronic hepatitis B", "COVID-19"],
              populations=["people living with HIV", "cisgender women", "men who have sex with men", "adults at high risk"],
              interventions=["long-acting cabotegravir", "lenacapavir", "nirmatrelvir-ritonavir", "bulevirtide"],
              comparators=["daily oral tenofovir-emtricitabine", "placebo", "standard oral antiretroviral therapy"],
              biomarkers=["viral load", "CD4 count", "HBsAg levels", "drug resistance mutations"],
              mechanisms=["viral immune escape", "capsid inhibition", "latent reservoir persistence"],
              outcomes=["incident infection", "sustained virologic suppression", "hospitalization or death", "functional cure"],
              phenotypes=["drug resistance", "persistent infection", "viral rebound"]),
            C(conditions=["respiratory syncytial virus infection", "Plasmodium falciparum malaria", "influenza", "invasive pneumococcal disease"],
              populations=["adults aged 60 years or older", "infants", "pregnant women", "children aged 5 to 36 months"],
              interventions=["RSV prefusion F vaccine", "nirsevimab", "R21/Matrix-M malaria vaccine", "mRNA influenza vaccine",
                             "21-valent pneumococcal conjugate vaccine"],
              comparators=["placebo", "licensed comparator vaccine", "rabies control vaccine"],
              biomarkers=["neutralizing antibody titers", "anti-circumsporozoite antibody titers", "T-cell responses"],
              mechanisms=["T-cell memory formation after vaccination", "germinal center responses", "antibody waning"],
              outcomes=["vaccine efficacy", "medically attended lower respiratory tract disease", "clinical malaria", "hospitalization"],
              phenotypes=["waning immunity", "severe disease", "breakthrough infection"]),
        ],
        models=["hollow-fiber infection models", "genomic surveillance data", "human challenge studies", "macaque models"],
        keywords=["infectious disease", "antimicrobial resistance", "vaccines", "global health", "antivirals"],
        journals=["Lancet Infectious Diseases", "Clinical Infectious Diseases", "New England Journal of Medicine",
                  "Journal of Infectious Diseases"],
    ),
    Topic(
        slug="gene-editing",
        label="CRISPR and gene editing",
        burdens=["a target of therapies moving rapidly from the laboratory to the clinic",
                 "a condition for which one-time genetic treatments are now being tested",
                 "an inherited disease with high unmet need"],
        clusters=[
            C(conditions=["sickle cell disease", "transfusion-dependent beta-thalassemia"],
              populations=["adolescents and adults", "patients with severe vaso-occlusive crises", "pediatric patients"],
              interventions=["exagamglogene autotemcel", "base editing of the BCL11A enhancer", "gamma-globin promoter base editing"],
              comparators=["standard supportive care", "lentiviral gene addition", "matched historical controls"],
              biomarkers=["fetal hemoglobin levels", "editing efficiency", "F-cell percentage"],
              mechanisms=["BCL11A enhancer disruption", "double-strand break repair", "adenine base editor deamination"],
              outcomes=["freedom from vaso-occlusive crises", "transfusion independence", "durable engraftment"],
              phenotypes=["large structural variants", "mosaic editing", "clonal hematopoiesis"]),
            C(conditions=["transthyretin amyloidosis", "heterozygous familial hypercholesterolemia", "hereditary angioedema",
                          "alpha-1 antitrypsin deficiency"],
              populations=["patients with cardiomyopathy", "patients with polyneuropathy", "adults with established disease"],
              interventions=["in vivo CRISPR-Cas9 editing of TTR", "a lipid nanoparticle-delivered PCSK9 base editor",
                             "in vivo KLKB1 editing", "prime editing of SERPINA1"],
              comparators=["placebo", "vehicle-treated animals", "untreated controls"],
              biomarkers=["serum TTR concentration", "plasma kallikrein activity", "LDL cholesterol", "off-target editing frequency"],
              mechanisms=["lipid nanoparticle hepatocyte uptake", "prime editing guide RNA design", "adenine base editor deamination"],
              outcomes=["reduction in serum TTR", "LDL cholesterol reduction", "attack rate reduction", "durability of editing"],
              phenotypes=["immune responses to Cas9", "transient transaminase elevation", "off-target editing"]),
            C(conditions=["Duchenne muscular dystrophy", "Leber congenital amaurosis", "Huntington's disease", "spinal muscular atrophy"],
              populations=["pediatric patients", "patients with CEP290 mutations", "ambulatory boys"],
              interventions=["AAV-delivered Cas9 exon skipping", "subretinal CRISPR editing of CEP290", "CRISPR-Cas13 RNA editing",
                             "epigenome editing"],
              comparators=["untreated controls", "vehicle-treated animals", "AAV-GFP controls"],
              biomarkers=["dystrophin expression", "best-corrected visual acuity", "mutant huntingtin levels",
                          "off-target editing frequency"],
              mechanisms=["AAV capsid immunogenicity", "p53 activation after DNA damage", "Cas13 collateral activity",
                          "DNA methylation silencing"],
              outcomes=["functional muscle improvement", "visual function", "editing efficiency in target tissue", "safety and tolerability"],
              phenotypes=["immune responses to Cas9", "chromosomal rearrangements", "AAV integration"]),
        ],
        models=["human CD34+ hematopoietic stem cells", "non-human primates", "humanized mouse models", "iPSC-derived hepatocytes"],
        keywords=["CRISPR", "gene editing", "gene therapy", "base editing", "genomic medicine"],
        journals=["Nature Biotechnology", "Nature Medicine", "New England Journal of Medicine", "Molecular Therapy", "The CRISPR Journal"],
        kinds={"trial": 3, "cohort": 1, "mechanistic": 5, "meta": 1, "biomarker": 2},
    ),
    Topic(
        slug="metabolic-disease",
        label="Diabetes, obesity and metabolism",
        burdens=["rising in prevalence in nearly every country", "a major driver of cardiovascular and kidney disease",
                 "a chronic condition requiring lifelong management"],
        clusters=[
            C(conditions=["obesity", "overweight with weight-related comorbidities", "obesity-related heart failure"],
              populations=["adults with overweight or obesity", "adolescents with obesity", "adults without diabetes"],
              interventions=["semaglutide", "tirzepatide", "retatrutide", "orforglipron", "intensive lifestyle intervention"],
              comparators=["placebo", "lifestyle counseling alone", "semaglutide"],
              biomarkers=["body mass index", "waist circumference", "lean mass", "high-sensitivity C-reactive protein"],
              mechanisms=["GLP-1 receptor agonism", "GIP and glucagon co-agonism", "hypothalamic appetite regulation"],
              outcomes=["weight reduction", "proportion achieving 15% weight loss", "major adverse cardiovascular events",
                        "weight maintenance after discontinuation"],
              phenotypes=["weight regain", "lean mass loss", "adipose tissue inflammation"]),
            C(conditions=["type 2 diabetes", "diabetic kidney disease", "prediabetes"],
              populations=["newly diagnosed patients", "patients with stage 3 chronic kidney disease",
                           "patients with established cardiovascular disease"],
              interventions=["tirzepatide", "semaglutide", "finerenone", "once-weekly insulin icodec", "dapagliflozin"],
              comparators=["insulin glargine", "placebo", "dulaglutide", "once-daily basal insulin"],
              biomarkers=["glycated hemoglobin", "urinary albumin-to-creatinine ratio", "estimated glomerular filtration rate", "C-peptide"],
              mechanisms=["insulin resistance", "beta-cell stress", "glomerular hyperfiltration"],
              outcomes=["change in HbA1c", "kidney disease progression", "hypoglycemia events", "major adverse cardiovascular events"],
              phenotypes=["beta-cell loss", "albuminuria", "glycemic deterioration"]),
            C(conditions=["type 1 diabetes", "metabolic dysfunction-associated steatohepatitis", "stage 2 presymptomatic type 1 diabetes"],
              populations=["children and adolescents", "patients with F2-F3 fibrosis", "autoantibody-positive relatives"],
              interventions=["teplizumab", "resmetirom", "automated insulin delivery", "stem cell-derived islet infusion", "survodutide"],
              comparators=["placebo", "multiple daily injections", "sensor-augmented pump therapy"],
              biomarkers=["C-peptide", "liver fat content", "continuous glucose monitoring time in range", "islet autoantibodies"],
              mechanisms=["autoreactive T-cell activation", "hepatic de novo lipogenesis", "thyroid hormone receptor-beta agonism"],
              outcomes=["time in range", "MASH resolution", "fibrosis improvement", "delay of clinical type 1 diabetes"],
              phenotypes=["beta-cell loss", "hepatic fibrosis", "hepatic steatosis"]),
        ],
        models=["diet-induced obese mice", "human islet preparations", "liver biopsies", "continuous glucose monitoring data"],
        keywords=["diabetes", "obesity", "GLP-1", "metabolism", "MASH"],
        journals=["Diabetes Care", "Lancet Diabetes & Endocrinology", "Diabetologia", "Journal of Hepatology"],
    ),
    Topic(
        slug="microbiome",
        label="Microbiome",
        burdens=["increasingly linked to the composition of the gut microbiota", "shaped by diet, antibiotics and early-life exposures",
                 "a condition in which the microbiome is an emerging therapeutic target"],
        clusters=[
            C(conditions=["recurrent Clostridioides difficile infection", "antibiotic-associated diarrhea",
                          "multidrug-resistant organism colonization"],
              populations=["patients receiving broad-spectrum antibiotics", "older adults", "hospitalized patients"],
              interventions=["fecal microbiota transplantation", "oral purified Firmicutes spores",
                             "a defined live biotherapeutic consortium", "bacteriophage therapy"],
              comparators=["placebo", "vancomycin", "autologous transplantation"],
              biomarkers=["secondary bile acids", "microbial alpha diversity", "donor strain engraftment"],
              mechanisms=["colonization resistance", "bile acid metabolism", "nutrient competition"],
              outcomes=["recurrence of infection", "decolonization", "engraftment of donor strains"],
              phenotypes=["dysbiosis", "pathobiont expansion", "antibiotic-associated colitis"]),
            C(conditions=["irritable bowel syndrome", "inflammatory bowel disease", "metabolic syndrome"],
              populations=["healthy volunteers", "adults with obesity", "patients with mild-to-moderate disease"],
              interventions=["a high-fiber dietary intervention", "probiotic supplementation", "fecal microbiota transplantation",
                             "a low-FODMAP diet"],
              comparators=["placebo", "usual diet", "sham transplantation"],
              biomarkers=["short-chain fatty acid levels", "Akkermansia muciniphila abundance", "fecal calprotectin",
                          "microbial alpha diversity"],
              mechanisms=["short-chain fatty acid signaling", "microbial tryptophan metabolism", "mucosal barrier integrity"],
              outcomes=["symptom severity", "clinical remission", "insulin sensitivity"],
              phenotypes=["intestinal permeability", "dysbiosis", "low-grade inflammation"]),
            C(conditions=["melanoma treated with immune checkpoint inhibitors", "advanced non-small cell lung cancer on immunotherapy"],
              populations=["patients with primary resistance to immunotherapy", "patients receiving anti-PD-1 therapy",
                           "patients receiving antibiotics before immunotherapy"],
              interventions=["fecal microbiota transplantation from responders", "a defined live biotherapeutic consortium",
                             "a high-fiber diet during immunotherapy"],
              comparators=["placebo", "anti-PD-1 therapy alone", "usual diet"],
              biomarkers=["Akkermansia muciniphila abundance", "microbial alpha diversity", "fecal metabolomic profile"],
              mechanisms=["microbial modulation of antitumor immunity", "short-chain fatty acid signaling", "dendritic cell priming"],
              outcomes=["objective response to immunotherapy", "progression-free survival", "immune-related adverse events"],
              phenotypes=["dysbiosis", "immune evasion", "immune-related colitis"]),
            C(conditions=["necrotizing enterocolitis", "late-onset neonatal sepsis"],
              populations=["preterm infants", "very low birth weight infants", "infants born by cesarean section"],
              interventions=["Bifidobacterium infantis supplementation", "human milk oligosaccharides", "donor human milk"],
              comparators=["placebo", "standard care", "preterm formula"],
              biomarkers=["Bifidobacterium colonization", "fecal calprotectin", "microbial alpha diversity"],
              mechanisms=["mucosal barrier integrity", "TLR4-mediated intestinal inflammation", "early-life colonization"],
              outcomes=["incidence of necrotizing enterocolitis", "late-onset sepsis", "all-cause mortality"],
              phenotypes=["gut barrier immaturity", "dysbiosis", "pathobiont expansion"]),
        ],
        models=["germ-free mice", "shotgun metagenomic sequencing", "gut-on-a-chip models", "gnotobiotic mouse models"],
        keywords=["gut microbiome", "gut microbiota", "metagenomics", "probiotics", "host-microbe interactions"],
        journals=["Cell Host & Microbe", "Microbiome", "Gut Microbes", "Nature Microbiology"],
        kinds={"trial": 3, "cohort": 2, "mechanistic": 4, "meta": 1, "biomarker": 1},
    ),
]

GENERAL_JOURNALS = ["New England Journal of Medicine", "The Lancet", "JAMA", "Nature Medicine", "Nature Communications",
                    "BMJ", "Cell Reports Medicine", "PLOS Medicine", "Science Translational Medicine"]

SURNAMES = ["Nakamura", "Okafor", "Schmidt", "Garcia", "Chen", "Rossi", "Kowalski", "Haddad", "Johansson", "Patel", "Dubois",
            "Silva", "Kim", "Nguyen", "O'Brien", "Moreau", "Ivanova", "Tanaka", "Mensah", "Fischer", "Lopez", "Cohen", "Singh",
            "Andersen", "Hughes", "Yilmaz", "Costa", "Novak", "Murphy", "Wang", "Ahmed", "Bianchi", "Kaur", "Larsen", "Mwangi",
            "Sato", "Petrov", "Fernandes", "Walker", "Zhang", "Rahman", "Keller", "Alvarez", "Park", "Hoffmann", "Osei", "Ricci",
            "Eriksson", "Gupta", "Lindqvist", "Abdullah", "Santos", "Wright", "Li", "Horvath", "Adeyemi", "Martin", "Jensen"]

DESIGNS = {
    # Trials always have a comparator arm; "placebo-controlled" designs are only picked when it is placebo.
    "trial": ["open-label, randomized phase 3 trial", "randomized phase 2 trial", "multicenter, randomized phase 3 trial",
              "pragmatic randomized trial"],
    "placebo_trial": ["randomized, double-blind, placebo-controlled phase 3 trial",
                      "randomized, placebo-controlled phase 2 trial"],
    "cohort": ["prospective multicenter cohort study", "retrospective cohort study", "nationwide registry-based cohort study",
               "real-world observational study", "population-based case-control study"],
    "meta": ["systematic review and meta-analysis", "network meta-analysis", "individual patient data meta-analysis"],
    "biomarker": ["prospective biomarker study", "post hoc analysis of a randomized trial", "exploratory translational analysis"],
    "mechanistic": ["preclinical study", "translational study", "multi-omic analysis"],
}

TECHNIQUES = ["single-cell RNA sequencing", "genome-wide loss-of-function screens", "spatial transcriptomics", "quantitative proteomics",
              "whole-genome sequencing", "chromatin accessibility profiling", "longitudinal multiplexed imaging"]

GAPS = [
    "However, evidence to guide treatment selection remains limited.",
    "Whether {intervention} improves {outcome} in this setting has not been established.",
    "Reliable predictors of {outcome} are lacking.",
    "The biological basis of {phenotype} is incompletely understood.",
    "Data from diverse, real-world populations are scarce.",
    "Optimal sequencing of available therapies is uncertain.",
]

CONCLUSIONS = {
    "trial": [
        "{intervention} significantly improved {outcome} compared with {comparator} in {condition}.",
        "These results support {intervention} as a new standard option for {condition}.",
        "{intervention} was associated with a manageable safety profile and clinically meaningful benefit.",
        "Longer follow-up is needed to confirm the durability of benefit with {intervention}.",
    ],
    "cohort": [
        "{biomarker} identified patients likely to have worse {outcome} and may help guide monitoring.",
        "Real-world outcomes with {intervention} were consistent with those reported in pivotal trials.",
        "These findings highlight disparities in {outcome} that warrant targeted interventions.",
    ],
    "mechanistic": [
        "Our data identify {mechanism} as a tractable therapeutic target in {condition}.",
        "Targeting {mechanism} may prevent {phenotype} and improve responses to {intervention}.",
        "These findings provide a mechanistic framework for rational combination strategies.",
    ],
    "meta": [
        "{intervention} was associated with better {outcome}, with low heterogeneity across trials.",
        "The certainty of evidence was moderate, and further head-to-head trials are warranted.",
    ],
    "biomarker": [
        "{biomarker} is a promising predictive biomarker that should be validated prospectively.",
        "Incorporating {biomarker} into clinical decision-making could spare low-risk patients from overtreatment.",
    ],
}


def cap(text: str) -> str:
    """Capitalise the first character only (keeps acronyms like NSCLC intact)."""
    return text[:1].upper() + text[1:]


def p_value(rng: random.Random) -> str:
    """A plausible P value string."""
    return rng.choice(["P<0.001", "P=0.002", "P=0.004", "P=0.01", "P=0.02", "P=0.03", "P<0.001", "P=0.006"])


def hazard(rng: random.Random, *, harmful: bool = False) -> str:
    """'hazard ratio 0.72; 95% CI, 0.61 to 0.85': a CI that brackets the estimate and excludes 1."""
    if harmful:
        hr = rng.uniform(1.18, 2.6)
        lo, hi = max(hr * rng.uniform(0.72, 0.9), 1.03), hr * rng.uniform(1.1, 1.4)
    else:
        hr = rng.uniform(0.42, 0.9)
        lo, hi = hr * rng.uniform(0.72, 0.9), min(hr * rng.uniform(1.1, 1.3), 0.98)
    return f"hazard ratio {hr:.2f}; 95% CI, {lo:.2f} to {hi:.2f}"


def fill(template: str, slots: dict[str, str]) -> str:
    """Format a template with the article's chosen phrases."""
    return template.format(**slots)


def make_title(kind: str, s: dict[str, str], rng: random.Random) -> str:
    """One title for an article of `kind` from its slots."""
    options = {
        "trial": [
            "{Intervention} versus {comparator} for {condition} in {population}: {a_design}",
            "Efficacy and safety of {intervention} in {condition}: results from {a_design}",
            "{Intervention} for {condition}: {outcome} in {a_design}",
            "{Intervention} for {condition} in {population}",
            "Long-term outcomes of {intervention} in {condition}",
        ],
        "cohort": [
            "{Biomarker} and risk of {outcome} in {condition}: {a_design}",
            "Real-world effectiveness of {intervention} in {condition}",
            "Incidence and predictors of {outcome} in {condition} among {population}",
            "Trends in {outcome} in {condition} among {population}, 2010-2023",
        ],
        "mechanistic": [
            "{Mechanism} drives {phenotype} in {condition}",
            "Targeting {mechanism} overcomes {phenotype} in {models}",
            "Insights from {technique} into the role of {mechanism} in {condition}",
            "{Mechanism} links {biomarker} to {phenotype}",
        ],
        "meta": [
            "{Intervention} for {condition}: {a_design} of {k} randomized trials",
            "Comparative efficacy of treatments for {condition}: {a_design}",
        ],
        "biomarker": [
            "{Biomarker} predicts response to {intervention} in {condition}",
            "{Biomarker} as a prognostic marker of {outcome} in {condition}: {a_design}",
            "Dynamics of {biomarker} during {intervention} for {condition}",
        ],
    }[kind]
    return fill(rng.choice(options), s)


def make_abstract(kind: str, s: dict[str, str], topic: Topic, rng: random.Random) -> str:
    """A structured-ish abstract (background, methods, results, conclusions) for `kind`."""
    background = f"{cap(s['condition'])} is {rng.choice(topic.burdens)}. " + fill(rng.choice(GAPS), s)
    n = rng.choice([rng.randint(60, 480), rng.randint(500, 2400)])
    pct_a, pct_b = rng.randint(18, 64), rng.randint(6, 40)
    if kind == "trial":
        methods = (f"In this {s['design']}, we enrolled {n} participants with {s['condition']}, drawn from "
                   f"{s['population']}, at {rng.randint(8, 190)} sites in {rng.randint(3, 31)} countries and randomly "
                   f"assigned them to {s['intervention']} or {s['comparator']}. The primary end point was {s['outcome']}.")
        results = (f"At a median follow-up of {rng.randint(9, 48)} months, {s['outcome']} favored {s['intervention']} "
                   f"({hazard(rng)}; {p_value(rng)}). Grade 3 or higher adverse events occurred in {pct_a}% and {pct_b}% "
                   f"of patients, respectively. Benefit was observed across subgroups defined by {s['biomarker']}.")
    elif kind == "cohort":
        n = rng.randint(1200, 240000)
        methods = (f"We conducted {s['a_design']} of {n:,} people with {s['condition']} among {s['population']}, "
                   f"identified between {rng.randint(2005, 2015)} and {rng.randint(2019, 2023)}. Associations between "
                   f"{s['biomarker']} and {s['outcome']} were estimated with multivariable Cox models.")
        results = (f"During {rng.randint(2, 9)}.{rng.randint(0, 9)} years of follow-up, {rng.randint(180, 9000):,} events "
                   f"occurred. Unfavorable {s['biomarker']} was independently associated with worse {s['outcome']} "
                   f"(adjusted {hazard(rng, harmful=True)}). Treatment with {s['intervention']} was associated with a "
                   f"{pct_b}% relative improvement in {s['outcome']}.")
    elif kind == "mechanistic":
        methods = (f"Using {s['models']} and {s['technique']}, we investigated how {s['mechanism']} contributes to "
                   f"{s['phenotype']} in {s['condition']}.")
        results = (f"{cap(s['mechanism'])} was enriched in samples with {s['phenotype']} and correlated with {s['biomarker']}. "
                   f"Genetic or pharmacologic disruption of this pathway reduced {s['phenotype']} by {pct_a}% and restored "
                   f"sensitivity to {s['intervention']} ({p_value(rng)}). These effects were reproduced in "
                   f"{rng.choice(topic.models)}.")
    elif kind == "meta":
        methods = (f"We searched MEDLINE, Embase and trial registries through {rng.choice(['March', 'June', 'September', 'December'])} "
                   f"{rng.randint(2021, 2024)} for randomized trials of {s['intervention']} in {s['condition']}. "
                   f"Random-effects models pooled {s['k']} trials including {rng.randint(2000, 48000):,} participants.")
        pooled = hazard(rng).replace("hazard ratio", "pooled risk ratio")
        results = (f"{cap(s['intervention'])} improved {s['outcome']} compared with {s['comparator']} ({pooled}; "
                   f"I2={rng.randint(0, 62)}%). Effects were consistent across subgroups defined by {s['biomarker']}.")
    else:  # biomarker
        methods = (f"In {s['a_design']}, we measured {s['biomarker']} at baseline and during treatment in {n} "
                   f"participants with {s['condition']} receiving {s['intervention']}, drawn from {s['population']}.")
        auc = rng.uniform(0.68, 0.91)
        results = (f"{cap(s['biomarker'])} discriminated patients with and without {s['outcome']} with an area under the curve "
                   f"of {auc:.2f}. Patients with favorable {s['biomarker']} had improved {s['outcome']} ({hazard(rng)}; {p_value(rng)}).")
    conclusion = fill(rng.choice(CONCLUSIONS[kind]), s)
    return " ".join([f"BACKGROUND: {background}", f"METHODS: {methods}", f"RESULTS: {results}", f"CONCLUSIONS: {cap(conclusion)}"])


def make_article(topic: Topic, rng: random.Random, used_titles: set[str]) -> dict[str, object]:
    """One article dict (without external_id) with a title unique in `used_titles`."""
    kinds, weights = zip(*topic.kinds.items())
    for _ in range(200):
        kind = rng.choices(kinds, weights=weights)[0]
        cluster = rng.choice(topic.clusters)
        intervention = rng.choice(cluster.interventions)
        slots = {
            "condition": rng.choice(cluster.conditions),
            "population": rng.choice(cluster.populations),
            "intervention": intervention,
            # Never compare a drug with itself (some clusters list a drug as both arm and comparator).
            "comparator": rng.choice([c for c in cluster.comparators if c != intervention]),
            "biomarker": rng.choice(cluster.biomarkers),
            "mechanism": rng.choice(cluster.mechanisms),
            "outcome": rng.choice(cluster.outcomes),
            "phenotype": rng.choice(cluster.phenotypes),
            "models": rng.choice(topic.models),
            "technique": rng.choice(TECHNIQUES),
            "design": "",
            "k": str(rng.randint(5, 38)),
        }
        design_key = "placebo_trial" if kind == "trial" and slots["comparator"] == "placebo" else kind
        slots["design"] = rng.choice(DESIGNS[design_key])
        slots["a_design"] = ("an " if slots["design"][:1] in "aeiou" else "a ") + slots["design"]
        slots.update({f"{key[:1].upper()}{key[1:]}": cap(value) for key, value in list(slots.items())})
        title = make_title(kind, slots, rng)
        if title.lower() not in used_titles:
            used_titles.add(title.lower())
            break
    else:  # pragma: no cover - the banks are large enough; fail loudly if someone shrinks them
        raise RuntimeError(f"could not find a fresh title for {topic.slug}")
    abstract = make_abstract(kind, slots, topic, rng)
    # Keywords are the phrases actually used, so keyword search and the abstract agree.
    used = [slots["condition"], slots["intervention"], slots["biomarker"]]
    if kind == "mechanistic":
        used.append(slots["mechanism"])
    # The topic's first keyword is its canonical term ("CRISPR", "lung cancer"): every article carries it, so a
    # search for the field itself finds the whole topic; one more is drawn for variety.
    extra = [topic.keywords[0], rng.choice(topic.keywords[1:])]
    keywords = list(dict.fromkeys([*used, *extra, {"trial": "clinical trial", "cohort": "cohort study",
                                                   "mechanistic": "translational research", "meta": "meta-analysis",
                                                   "biomarker": "biomarker"}[kind]]))
    journal = rng.choice(topic.journals) if rng.random() < 0.75 else rng.choice(GENERAL_JOURNALS)
    authors = [f"{rng.choice(SURNAMES)} {rng.choice('ABCDEFGHJKLMNPRSTWY')}{rng.choice(['', rng.choice('ABCDEFGHJKLMNPRSTWY')])}"
               for _ in range(rng.randint(3, 9))]
    start = dt.date(2021, 1, 4)
    published = start + dt.timedelta(days=rng.randint(0, (dt.date(2025, 6, 30) - start).days))
    return {
        "title": title,
        "abstract": abstract,
        "journal": journal,
        "authors": list(dict.fromkeys(authors)),
        "published_date": published.isoformat(),
        "keywords": keywords,
        "topic": topic.slug,
        "kind": kind,
    }


def build_corpus(seed: int = SEED, per_topic: int = PER_TOPIC) -> list[dict[str, object]]:
    """All articles, PMID-like ids increasing with publication date (as real PMIDs roughly do)."""
    rng = random.Random(seed)
    used_titles: set[str] = set()
    articles = [make_article(topic, rng, used_titles) for topic in TOPICS for _ in range(per_topic)]
    articles.sort(key=lambda a: (a["published_date"], a["title"]))
    ids = sorted(rng.sample(range(33_400_000, 40_600_000), len(articles)))
    for article, pmid in zip(articles, ids):
        article["external_id"] = str(pmid)
    return articles


def main() -> None:
    """Write articles.json next to this script."""
    articles = build_corpus()
    OUTPUT.write_text(json.dumps(articles, indent=1, sort_keys=True, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"wrote {len(articles)} articles across {len(TOPICS)} topics to {OUTPUT}")


if __name__ == "__main__":
    main()
